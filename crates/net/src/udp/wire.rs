//! The header every test datagram carries, ahead of its padding.
//!
//! `magic` (4) | `flow` (4) | `cookie` (8) | `seq` (8) | `send_ns` (8), all
//! big-endian: 32 bytes. The sequence number's top bit says the sender
//! sent it inside its window, so the receiver counts exactly the datagrams
//! the sender counted, whenever they arrive.

/// Bytes of the header: the smallest datagram a test may ask for.
pub const HEADER: usize = 32;
/// Largest UDP payload over IPv4 (65535 - 8 UDP - 20 IP).
pub const MAX_DATAGRAM: u64 = 65507;
/// UDP payload that fills a 1500-byte MTU over IPv4 (1500 - 20 - 8).
pub const DEFAULT_DATAGRAM: u64 = 1472;
const MAGIC: [u8; 4] = *b"IOTU";
/// The sequence number's flag: sent inside the sender's window.
const IN_WINDOW: u64 = 1 << 63;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub flow: u32,
    pub cookie: u64,
    pub seq: u64,
    /// The sender's monotonic clock, ns (only differences are used).
    pub send_ns: u64,
    pub in_window: bool,
}

impl Header {
    /// Writes the header into the start of `buf` (at least [`HEADER`] bytes).
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4..8].copy_from_slice(&self.flow.to_be_bytes());
        buf[8..16].copy_from_slice(&self.cookie.to_be_bytes());
        let seq = (self.seq & !IN_WINDOW) | if self.in_window { IN_WINDOW } else { 0 };
        buf[16..24].copy_from_slice(&seq.to_be_bytes());
        buf[24..32].copy_from_slice(&self.send_ns.to_be_bytes());
    }

    /// The header of a received datagram; None for anything that is not
    /// one of ours (too short, another magic). The cookie is the caller's
    /// to check.
    pub fn read(buf: &[u8]) -> Option<Header> {
        if buf.len() < HEADER || buf[0..4] != MAGIC {
            return None;
        }
        // In bounds: the length is checked above.
        let u64_at = |i: usize| u64::from_be_bytes(buf[i..i + 8].try_into().unwrap_or_default());
        let seq = u64_at(16);
        Some(Header {
            flow: u32::from_be_bytes(buf[4..8].try_into().unwrap_or_default()),
            cookie: u64_at(8),
            seq: seq & !IN_WINDOW,
            send_ns: u64_at(24),
            in_window: seq & IN_WINDOW != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let h = Header {
            flow: 7,
            cookie: 0xdead_beef_0102_0304,
            seq: (1 << 62) + 5,
            send_ns: 123_456_789,
            in_window: true,
        };
        let mut buf = [0u8; 64];
        h.write(&mut buf);
        assert_eq!(Header::read(&buf), Some(h));
        let out = Header {
            in_window: false,
            ..h
        };
        out.write(&mut buf);
        assert_eq!(Header::read(&buf[..HEADER]), Some(out));
        assert_eq!(Header::read(&buf[..HEADER - 1]), None, "short");
        buf[0] = b'X';
        assert_eq!(Header::read(&buf), None, "another magic");
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
            let _ = Header::read(&bytes);
        }
    }
}
