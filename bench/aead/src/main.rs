//! Seals 16 KiB records (TLS's largest) with each provider's AEADs, one
//! thread, and prints MB/s per CPU-second: the cipher's cost alone, to
//! set beside `openssl speed -evp C -bytes 16384` and the TLS stream.

use std::time::Instant;

const RECORD: usize = 16384;

fn cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// Seals `total` bytes in records under `$m`'s `$alg`; prints the rate.
macro_rules! seal {
    ($name:expr, $m:ident, $alg:expr, $total:expr) => {{
        use $m::aead::{Aad, LessSafeKey, Nonce, UnboundKey};
        let alg = $alg;
        let key = LessSafeKey::new(UnboundKey::new(alg, &vec![7u8; alg.key_len()]).expect("key"));
        // The payload and its content type, as a TLS 1.3 record holds.
        let mut buf = vec![0x5au8; RECORD + 1];
        let (t0, c0) = (Instant::now(), cpu_s());
        let mut seq = 0u64;
        while (seq as usize) * RECORD < $total {
            let mut n = [0u8; 12];
            n[4..].copy_from_slice(&seq.to_be_bytes());
            let h = [23u8, 3, 3, 0x40, 0x11];
            let tag = key
                .seal_in_place_separate_tag(Nonce::assume_unique_for_key(n), Aad::from(h), &mut buf)
                .expect("seal");
            std::hint::black_box(tag.as_ref());
            seq += 1;
        }
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
        let bytes = seq as f64 * RECORD as f64;
        println!("{:<30} seal {:8.0} MB/s per CPU-second ({:.0} MB/s wall)", $name, bytes / cpu / 1e6, bytes / wall / 1e6);
        // Open: one sealed record (payload + tag), decrypted in place again
        // and again from a copy, the copy's cost measured apart.
        let n = [0u8; 12];
        let h = [23u8, 3, 3, 0x40, 0x11];
        let mut sealed = vec![0x5au8; RECORD + 1];
        let tag = key
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(n), Aad::from(h), &mut sealed)
            .expect("seal");
        sealed.extend_from_slice(tag.as_ref());
        let mut work = sealed.clone();
        let (t0, c0) = (Instant::now(), cpu_s());
        let mut k = 0usize;
        while k * RECORD < $total {
            work.copy_from_slice(&sealed);
            let plain = key
                .open_in_place(Nonce::assume_unique_for_key(n), Aad::from(h), &mut work)
                .expect("open");
            std::hint::black_box(plain.len());
            k += 1;
        }
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
        let bytes = k as f64 * RECORD as f64;
        println!("{:<30} open {:8.0} MB/s per CPU-second ({:.0} MB/s wall; with a 16 KiB copy per record)", $name, bytes / cpu / 1e6, bytes / wall / 1e6);
    }};
}

fn main() {
    let gib: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let total = gib << 30;
    seal!("ring aes-128-gcm", ring, &ring::aead::AES_128_GCM, total);
    seal!("aws-lc-rs aes-128-gcm", aws_lc_rs, &aws_lc_rs::aead::AES_128_GCM, total);
    seal!("ring aes-256-gcm", ring, &ring::aead::AES_256_GCM, total);
    seal!("aws-lc-rs aes-256-gcm", aws_lc_rs, &aws_lc_rs::aead::AES_256_GCM, total);
    seal!("ring chacha20-poly1305", ring, &ring::aead::CHACHA20_POLY1305, total);
    seal!("aws-lc-rs chacha20-poly1305", aws_lc_rs, &aws_lc_rs::aead::CHACHA20_POLY1305, total);
}
