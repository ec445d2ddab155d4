//! Test helper: a scripted iSCSI target on loopback, for what tgt never does
//! on request (pings, rejects, hostile R2Ts and Data-In, dribbled answers).
//!
//! Plain module on `iotoll_iscsi`'s codec, so other crates' tests can
//! include it with `#[path = "../../iscsi/tests/common/fake.rs"] mod fake;`
//! (the including crate needs `iotoll-iscsi` as a dependency).
//!
//! [`fake`] runs a script on one connection after a login; [`serve`] hands
//! the script the connection before the login; [`LunTarget`] answers every
//! connection as a small disk LUN (INQUIRY, READ CAPACITY(16), REPORT LUNS,
//! READ(16), logout), with WRITE(16) left to a script: enough for
//! `iotoll disk run` to reach its workload.

#![allow(dead_code)]

use iotoll_iscsi::pdu::{self, op, Bhs, Decoder, Digests, NO_TAG};
use iotoll_iscsi::text;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub const IQN: &str = "iqn.2026-11.test.iotoll:fake";

/// Block size and capacity of a [`LunTarget`]'s LUN.
pub const LUN_BLOCK: u32 = 512;
pub const LUN_BYTES: u64 = 1 << 30;

/// The target's end of one connection.
pub struct Peer {
    pub sock: TcpStream,
    pub buf: Vec<u8>,
    pub stat_sn: u32,
    pub exp_cmd_sn: u32,
    /// MaxCmdSN = ExpCmdSN + window - 1.
    pub window: u32,
    /// Operational keys answered other than [`Peer::login`]'s defaults.
    pub keys: Vec<(&'static str, String)>,
    /// Digests on the PDUs after the login (set them once it is over).
    pub digests: Digests,
}

impl Peer {
    pub fn new(sock: TcpStream, window: u32) -> Peer {
        Peer {
            sock,
            buf: Vec::new(),
            stat_sn: 100,
            exp_cmd_sn: 0,
            window,
            keys: Vec::new(),
            digests: Digests::default(),
        }
    }

    pub fn recv(&mut self) -> Option<(Bhs, Vec<u8>)> {
        let dec = Decoder {
            digests: self.digests,
            max_data: 1 << 20,
        };
        loop {
            if let Ok(Some((p, n))) = dec.decode(&self.buf) {
                let out = (p.bhs, p.data.to_vec());
                self.buf.drain(..n);
                return Some(out);
            }
            let mut chunk = [0u8; 65536];
            match self.sock.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The PDU with ExpCmdSN and MaxCmdSN filled in, encoded.
    pub fn frame(&self, mut bhs: Bhs, data: &[u8]) -> Vec<u8> {
        bhs.set_u32(28, self.exp_cmd_sn);
        bhs.set_u32(
            32,
            self.exp_cmd_sn.wrapping_add(self.window).wrapping_sub(1),
        );
        let mut out = Vec::new();
        pdu::encode(&mut out, bhs, data, self.digests);
        out
    }

    pub fn send(&mut self, bhs: Bhs, data: &[u8]) {
        let out = self.frame(bhs, data);
        let _ = self.sock.write_all(&out);
    }

    /// A PDU that carries status: takes the next StatSN.
    pub fn send_status(&mut self, mut bhs: Bhs, data: &[u8]) {
        bhs.set_u32(24, self.stat_sn);
        self.stat_sn = self.stat_sn.wrapping_add(1);
        self.send(bhs, data);
    }

    /// The answer to one Login Request: every stage transition granted,
    /// every operational key answered with a value the RFC result
    /// functions allow (or the one in `keys`).
    pub fn login_answer(&mut self, req: &Bhs, data: &[u8], transit: bool) {
        let keys = text::decode(data).expect("login keys");
        self.exp_cmd_sn = req.u32_at(24);
        let nsg = req.flags() & 3;
        let mut answer: Vec<(&str, String)> = Vec::new();
        for (k, _) in &keys {
            let a = match self.keys.iter().find(|(o, _)| o == k) {
                Some((_, v)) => v.clone(),
                None => match k.as_str() {
                    "HeaderDigest" | "DataDigest" => "None".to_string(),
                    "InitialR2T" => "Yes".into(),
                    "ImmediateData" => "Yes".into(),
                    "MaxBurstLength" => "262144".into(),
                    "FirstBurstLength" => "65536".into(),
                    "MaxOutstandingR2T" | "MaxConnections" => "1".into(),
                    "DataPDUInOrder" | "DataSequenceInOrder" => "Yes".into(),
                    "ErrorRecoveryLevel" => "0".into(),
                    "DefaultTime2Wait" => "2".into(),
                    "DefaultTime2Retain" => "0".into(),
                    "AuthMethod" => "None".into(),
                    _ => continue,
                },
            };
            answer.push((k.as_str(), a));
        }
        let mut body = Vec::new();
        text::encode(&answer, &mut body);
        let flags = if transit { 0x80 | nsg } else { 0 };
        let mut b = Bhs::new(op::LOGIN_RESP, false, flags | (req.flags() & 0x0c));
        b.0[8..14].copy_from_slice(&req.0[8..14]);
        if transit && nsg == 3 {
            b.set_u16(14, 7);
        }
        b.set_itt(req.itt());
        self.send_status(b, &body);
    }

    /// Answers Login Requests until the full-feature phase.
    pub fn login(&mut self) {
        loop {
            let (req, data) = self.recv().expect("login request");
            assert_eq!(req.opcode(), op::LOGIN_REQ);
            self.login_answer(&req, &data, true);
            if req.flags() & 3 == 3 {
                return;
            }
        }
    }

    /// The next PDU; a SCSI Command moves ExpCmdSN on.
    pub fn command(&mut self) -> Option<(Bhs, Vec<u8>)> {
        let (b, d) = self.recv()?;
        if b.opcode() == op::SCSI_COMMAND {
            self.exp_cmd_sn = b.u32_at(24).wrapping_add(1);
        }
        Some((b, d))
    }

    /// Completes a read with its data and status in one Data-In.
    pub fn read_done(&mut self, cmd: &Bhs, residual: u32) {
        let len = cmd.u32_at(20) - residual;
        self.read_data(cmd, &vec![0xab; len as usize], residual);
    }

    /// Completes a read with `data` and status in one Data-In.
    pub fn read_data(&mut self, cmd: &Bhs, data: &[u8], residual: u32) {
        let mut b = Bhs::new(
            op::DATA_IN,
            false,
            0x81 | if residual > 0 { 0x02 } else { 0 },
        );
        b.set_itt(cmd.itt());
        b.set_u32(20, NO_TAG);
        b.set_u32(44, residual);
        self.send_status(b, data);
    }

    /// One Data-In without status: `data_sn`, at `offset`.
    pub fn data_in(&mut self, cmd: &Bhs, data_sn: u32, offset: u32, data: &[u8]) {
        let mut b = Bhs::new(op::DATA_IN, false, 0);
        b.set_itt(cmd.itt());
        b.set_u32(20, NO_TAG);
        b.set_u32(36, data_sn);
        b.set_u32(40, offset);
        self.send(b, data);
    }

    /// A SCSI Response with GOOD status (nothing more transferred).
    pub fn good(&mut self, cmd: &Bhs) {
        let mut r = Bhs::new(op::SCSI_RESPONSE, false, 0x80);
        r.set_itt(cmd.itt());
        self.send_status(r, &[]);
    }

    /// Takes a write's data as a target that behaves (InitialR2T=Yes,
    /// MaxOutstandingR2T=1, MaxBurstLength 256 KiB): an R2T per burst past
    /// the immediate data, each answered in full, then GOOD.
    pub fn take_write(&mut self, cmd: &Bhs) {
        let len = cmd.u32_at(20);
        let mut off = cmd.data_len();
        let mut sn = 0;
        while off < len {
            let n = (len - off).min(262144);
            let ttt = 0x100 + sn;
            let r = self.r2t(cmd, ttt, sn, off, n);
            if self.sock.write_all(&r).is_err() {
                return;
            }
            loop {
                let Some((b, _)) = self.recv() else { return };
                if b.opcode() == op::DATA_OUT && b.ttt() == ttt && b.final_bit() {
                    break;
                }
            }
            off += n;
            sn += 1;
        }
        self.good(cmd);
    }

    /// Answers the next Text Request (SendTargets) with `pairs`, final.
    pub fn send_targets(&mut self, pairs: &[(&str, &str)]) {
        let Some((req, _)) = self.recv() else { return };
        let mut data = Vec::new();
        for (k, v) in pairs {
            data.extend_from_slice(format!("{k}={v}\0").as_bytes());
        }
        let mut b = Bhs::new(op::TEXT_RESP, false, 0x80);
        b.set_itt(req.itt());
        b.set_u32(20, NO_TAG);
        self.send_status(b, &data);
    }

    /// An R2T of the command `cmd`, not sent: callers batch them.
    pub fn r2t(&self, cmd: &Bhs, ttt: u32, r2t_sn: u32, offset: u32, len: u32) -> Vec<u8> {
        let mut b = Bhs::new(op::R2T, false, 0x80);
        b.set_itt(cmd.itt());
        b.set_u32(20, ttt);
        b.set_u32(24, self.stat_sn);
        b.set_u32(36, r2t_sn);
        b.set_u32(40, offset);
        b.set_u32(44, len);
        self.frame(b, &[])
    }
}

/// A target on a free loopback port handing `script` its one connection
/// before any login.
pub fn serve(script: impl FnOnce(&mut Peer) + Send + 'static) -> (String, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let portal = l.local_addr().expect("addr").to_string();
    let h = std::thread::spawn(move || {
        let (sock, _) = l.accept().expect("accept");
        script(&mut Peer::new(sock, 8));
    });
    (portal, h)
}

/// A target on a free loopback port running `script` on its one
/// connection after login.
pub fn fake(
    window: u32,
    script: impl FnOnce(&mut Peer) + Send + 'static,
) -> (String, JoinHandle<()>) {
    serve(move |p| {
        p.window = window;
        p.login();
        script(p);
    })
}

/// What a [`LunTarget`] does with a WRITE(16), its command PDU in hand.
pub type OnWrite = Arc<dyn Fn(&mut Peer, &Bhs) + Send + Sync>;

/// A disk LUN of [`LUN_BYTES`] on a free loopback port, every connection
/// served in its own thread until logout or close.
pub struct LunTarget {
    portal: String,
    accepted: Arc<AtomicUsize>,
}

/// What a [`LunTarget`]'s LUN says of itself: INQUIRY's vendor (8 bytes)
/// and product (16), READ CAPACITY(16)'s last LBA and block size.
#[derive(Clone, Copy)]
pub struct Lun {
    pub vendor: &'static [u8; 8],
    pub product: &'static [u8; 16],
    pub last_lba: u64,
    pub block: u32,
}

impl Lun {
    pub const FAKE: Lun = Lun {
        vendor: b"IOTOLL  ",
        product: b"FAKE-LUN        ",
        last_lba: LUN_BYTES / LUN_BLOCK as u64 - 1,
        block: LUN_BLOCK,
    };
}

impl LunTarget {
    pub fn start(on_write: OnWrite) -> LunTarget {
        LunTarget::with_keys(Vec::new(), on_write)
    }

    /// A LUN target answering the operational `keys` given.
    pub fn with_keys(keys: Vec<(&'static str, String)>, on_write: OnWrite) -> LunTarget {
        LunTarget::with(keys, Lun::FAKE, on_write)
    }

    /// A LUN target answering the operational `keys` given, its LUN
    /// saying it is `lun`.
    pub fn with(keys: Vec<(&'static str, String)>, lun: Lun, on_write: OnWrite) -> LunTarget {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let portal = l.local_addr().expect("addr").to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let n = accepted.clone();
        std::thread::spawn(move || {
            for sock in l.incoming() {
                let Ok(sock) = sock else { return };
                n.fetch_add(1, Ordering::SeqCst);
                let w = on_write.clone();
                let mut p = Peer::new(sock, 32);
                p.keys = keys.clone();
                std::thread::spawn(move || serve_lun(p, lun, w));
            }
        });
        LunTarget { portal, accepted }
    }

    pub fn portal(&self) -> String {
        self.portal.clone()
    }

    pub fn url(&self) -> String {
        format!("iscsi://{}/{IQN}/1", self.portal)
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

fn serve_lun(mut p: Peer, lun: Lun, on_write: OnWrite) {
    p.login();
    while let Some((cmd, _)) = p.command() {
        match cmd.opcode() {
            op::SCSI_COMMAND => {}
            op::LOGOUT_REQ => {
                let mut b = Bhs::new(op::LOGOUT_RESP, false, 0x80);
                b.set_itt(cmd.itt());
                p.send_status(b, &[]);
                return;
            }
            _ => continue,
        }
        let cdb = &cmd.0[32..48];
        let alloc = cmd.u32_at(20) as usize;
        let reply = |d: Vec<u8>| {
            let n = d.len().min(alloc);
            (d[..n].to_vec(), (alloc - n) as u32)
        };
        let (data, residual) = match cdb[0] {
            0x12 => {
                let mut d = vec![0u8; 36];
                d[2] = 5;
                d[3] = 2;
                d[4] = 31;
                d[8..16].copy_from_slice(lun.vendor);
                d[16..32].copy_from_slice(lun.product);
                d[32..36].copy_from_slice(b"0001");
                reply(d)
            }
            0x9e => {
                let mut d = vec![0u8; 32];
                d[..8].copy_from_slice(&lun.last_lba.to_be_bytes());
                d[8..12].copy_from_slice(&lun.block.to_be_bytes());
                reply(d)
            }
            0xa0 => {
                let mut d = vec![0u8; 16];
                d[3] = 8;
                d[9] = 1;
                reply(d)
            }
            0x88 => (vec![0xab; alloc], 0),
            0x8a => {
                on_write(&mut p, &cmd);
                continue;
            }
            _ => {
                p.good(&cmd);
                continue;
            }
        };
        p.read_data(&cmd, &data, residual);
    }
}

/// Small socket buffers on the target's end, so a target that stops
/// reading holds the initiator back soon (autotuning would take megabytes).
pub fn shrink_buffers(sock: &TcpStream) {
    use std::os::unix::io::AsRawFd;
    let n: libc::c_int = 65536;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: a valid socket and a c_int option value of its size.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&n as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

/// Answers SendTargets with "more to come" (an empty, non-final Text
/// Response) every 100 ms, `rounds` times, the last one final.
pub fn dribble_send_targets(p: &mut Peer, rounds: u32) {
    for round in 0..rounds {
        let Some((req, _)) = p.recv() else { return };
        std::thread::sleep(std::time::Duration::from_millis(100));
        let last = round + 1 == rounds;
        let mut b = Bhs::new(op::TEXT_RESP, false, if last { 0x80 } else { 0 });
        b.set_itt(req.itt());
        b.set_u32(20, if last { NO_TAG } else { 0x55 });
        p.send_status(b, &[]);
    }
}
