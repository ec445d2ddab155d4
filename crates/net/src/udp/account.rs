//! The receiver's accounting of one test's datagrams: per flow, sequence
//! numbers (received, out of order, duplicates), RFC 3550 jitter and bytes;
//! and what a sender counted. Memory is bounded per flow whatever arrives.

use super::wire::Header;
use crate::proto::ByteStats;
use serde::{Deserialize, Serialize};

/// Sequence numbers remembered behind the highest, to tell a duplicate
/// from a late arrival: 8 KiB of bits per flow. An older one is counted as
/// out of order (it cannot be told from a duplicate; docs/net.md says so).
pub const SEEN_WINDOW: u64 = 1 << 16;
/// A sequence number further ahead of the highest than this is not a
/// sender's (16 M datagrams unseen: over 20 s at 10 Gbit/s of 1472-byte
/// datagrams); ignored, so it cannot swell the expected count.
pub const MAX_JUMP: u64 = 1 << 24;

/// What a sender counted in its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sent {
    pub datagrams: u64,
    pub bytes: u64,
    /// Sends the kernel refused for lack of buffer (ENOBUFS, EAGAIN):
    /// not sent, not counted.
    pub refused: u64,
}

/// What a receiver counted of the datagrams sent inside the sender's
/// window, all flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Received {
    /// Distinct datagrams (duplicates not counted again).
    pub datagrams: u64,
    pub bytes: u64,
    pub out_of_order: u64,
    pub duplicates: u64,
    /// Not counted: too short, another magic or cookie, an unknown flow,
    /// an absurd jump. (Datagrams of this test sent outside the sender's
    /// window are passed over, not counted here.)
    pub ignored: u64,
    /// Per-flow bytes (for the slowest and fastest flow, and fairness).
    pub flows: ByteStats,
    /// RFC 3550 jitter at the end, summed over the flows that had two
    /// datagrams or more (`jitter_flows` of them), ns.
    pub jitter_ns_sum: f64,
    pub jitter_flows: u64,
}

/// One flow's receiving state.
#[derive(Debug, Clone)]
pub struct FlowRx {
    highest: Option<u64>,
    /// Bit `s % SEEN_WINDOW` for the sequence numbers in
    /// `highest - SEEN_WINDOW + 1 ..= highest` that arrived.
    seen: Vec<u64>,
    datagrams: u64,
    bytes: u64,
    out_of_order: u64,
    duplicates: u64,
    ignored: u64,
    last_transit: Option<i64>,
    /// Smoothed interarrival jitter, ns.
    jitter: f64,
}

impl Default for FlowRx {
    fn default() -> Self {
        FlowRx {
            highest: None,
            seen: vec![0; (SEEN_WINDOW / 64) as usize],
            datagrams: 0,
            bytes: 0,
            out_of_order: 0,
            duplicates: 0,
            ignored: 0,
            last_transit: None,
            jitter: 0.0,
        }
    }
}

impl FlowRx {
    fn bit(&mut self, s: u64) -> (&mut u64, u64) {
        let i = s % SEEN_WINDOW;
        (&mut self.seen[(i / 64) as usize], 1 << (i % 64))
    }

    /// Counts one datagram of `len` bytes, sequence `seq`, stamped
    /// `send_ns` by the sender and arrived at `recv_ns` (this host's clock).
    pub fn record(&mut self, seq: u64, len: usize, send_ns: u64, recv_ns: u64) {
        match self.highest {
            None => self.highest = Some(seq),
            Some(h) if seq > h => {
                if seq - h > MAX_JUMP {
                    self.ignored += 1;
                    return;
                }
                // Forget what falls out of the window as it slides.
                if seq - h >= SEEN_WINDOW {
                    self.seen.iter_mut().for_each(|w| *w = 0);
                } else {
                    for s in h + 1..seq {
                        let (w, b) = self.bit(s);
                        *w &= !b;
                    }
                }
                self.highest = Some(seq);
            }
            Some(h) => {
                if h - seq < SEEN_WINDOW {
                    let (w, b) = self.bit(seq);
                    if *w & b != 0 {
                        self.duplicates += 1;
                        return;
                    }
                }
                self.out_of_order += 1;
            }
        }
        let (w, b) = self.bit(seq);
        *w |= b;
        self.datagrams += 1;
        self.bytes += len as u64;
        // RFC 3550 6.4.1: D is the difference of two transit times
        // (arrival minus send, each on its own end's clock, so the clocks'
        // offset cancels), J += (|D| - J) / 16.
        let transit = recv_ns as i64 - send_ns as i64;
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    pub fn jitter_ns(&self) -> Option<f64> {
        (self.datagrams >= 2).then_some(self.jitter)
    }
}

/// A receiver's flows, and what it ignored before any flow saw it.
#[derive(Debug)]
pub struct Receiver {
    cookie: u64,
    flows: Vec<FlowRx>,
    ignored: u64,
    /// This test's datagrams and bytes of every phase, for the live lines:
    /// counting the window's only, the ramp-up's `--interval` lines of an
    /// rx test read 0.
    live: (u64, u64),
}

impl Receiver {
    pub fn new(cookie: u64, flows: usize) -> Self {
        Receiver {
            cookie,
            flows: vec![FlowRx::default(); flows],
            ignored: 0,
            live: (0, 0),
        }
    }

    /// Counts one datagram as it arrived (`buf`, at `recv_ns`).
    pub fn datagram(&mut self, buf: &[u8], recv_ns: u64) {
        let h = match Header::read(buf) {
            Some(h) if h.cookie == self.cookie => h,
            _ => return self.ignored += 1,
        };
        let Some(f) = self.flows.get_mut(h.flow as usize) else {
            return self.ignored += 1;
        };
        self.live = (self.live.0 + 1, self.live.1 + buf.len() as u64);
        // The ramp-up's, and those after the sender's window: not this
        // window's, and no stranger's either.
        if h.in_window {
            f.record(h.seq, buf.len(), h.send_ns, recv_ns);
        }
    }

    /// This test's datagrams and bytes received so far in every phase
    /// (for the live series).
    pub fn totals(&self) -> (u64, u64) {
        self.live
    }

    pub fn received(&self) -> Received {
        let mut r = Received {
            ignored: self.ignored,
            flows: ByteStats::from_counts(self.flows.iter().map(|f| f.bytes)),
            ..Default::default()
        };
        for f in &self.flows {
            r.datagrams += f.datagrams;
            r.bytes += f.bytes;
            r.out_of_order += f.out_of_order;
            r.duplicates += f.duplicates;
            r.ignored += f.ignored;
            if let Some(j) = f.jitter_ns() {
                r.jitter_ns_sum += j;
                r.jitter_flows += 1;
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(seqs: &[u64]) -> FlowRx {
        let mut f = FlowRx::default();
        for &s in seqs {
            f.record(s, 100, 0, 0);
        }
        f
    }

    #[test]
    fn in_order_loss_reorder_and_duplicates() {
        let f = flow(&[0, 1, 2, 3]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (4, 0, 0));
        assert_eq!(f.bytes, 400);
        // 2 lost: four of six arrived.
        let f = flow(&[0, 1, 3, 5]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (4, 0, 0));
        // 2 arrives after 3: out of order, and counted.
        let f = flow(&[0, 1, 3, 2, 4]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (5, 1, 0));
        // 3 twice, 2 twice (the second time late too): duplicates, not counted again.
        let f = flow(&[0, 1, 3, 3, 2, 2, 4]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (5, 1, 2));
        // The first datagram twice.
        let f = flow(&[0, 0]);
        assert_eq!((f.datagrams, f.duplicates), (1, 1));
    }

    #[test]
    fn the_seen_window_wraps_around_and_forgets_what_slides_out() {
        // Around the ring's end: seq SEEN_WINDOW - 1 and SEEN_WINDOW share
        // no bit, and SEEN_WINDOW + 3 reuses the bit of 3.
        let w = SEEN_WINDOW;
        let f = flow(&[w - 2, w - 1, w, w + 1, w - 1, w + 3, w + 2, w + 2]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (6, 1, 2));
        // A bit left set by an old sequence number is cleared as the window
        // slides over it: w + 3 is new, though 3 was seen.
        let f = flow(&[3, w + 1, w + 3]);
        assert_eq!((f.datagrams, f.duplicates), (3, 0));
        let f = flow(&[3, w + 4, w + 3]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (3, 1, 0));
        // A jump past the whole window clears it.
        let f = flow(&[1, 2, 5 * w, 2]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (4, 1, 0));
        // Older than the window: counted late (it cannot be told from a
        // duplicate).
        let f = flow(&[0, w + 10, 0]);
        assert_eq!((f.datagrams, f.out_of_order, f.duplicates), (3, 1, 0));
    }

    #[test]
    fn absurd_jumps_are_ignored_and_bound_nothing() {
        let f = flow(&[0, 1, MAX_JUMP + 2, 2, u64::MAX >> 1]);
        assert_eq!((f.datagrams, f.ignored), (3, 2));
        assert_eq!(f.highest, Some(2));
        assert_eq!(f.seen.len() as u64 * 64, SEEN_WINDOW, "memory is fixed");
    }

    #[test]
    fn jitter_is_rfc3550s_smoothed_transit_difference() {
        // Sent every 1000 ns; arrivals with transits 100, 300, 200, 200 ns.
        // D = 200, 100, 0: J = 200/16 = 12.5; 12.5 + (100 - 12.5)/16 =
        // 17.96875; 17.96875 + (0 - 17.96875)/16 = 16.845703125.
        let mut f = FlowRx::default();
        for (i, transit) in [100u64, 300, 200, 200].into_iter().enumerate() {
            let send = 5_000 + i as u64 * 1000;
            f.record(i as u64, 10, send, send + transit);
        }
        assert_eq!(f.jitter_ns(), Some(16.845703125));
        // The clocks' offset cancels: the receiver's clock behind the sender's.
        let mut g = FlowRx::default();
        for (i, transit) in [100i64, 300, 200, 200].into_iter().enumerate() {
            let send = 1_000_000 + i as u64 * 1000;
            g.record(i as u64, 10, send, (send as i64 - 900_000 + transit) as u64);
        }
        assert_eq!(g.jitter_ns(), f.jitter_ns());
        assert_eq!(flow(&[0]).jitter_ns(), None, "one datagram has no jitter");
    }

    #[test]
    fn the_receiver_ignores_what_is_not_this_tests_window() {
        let mut r = Receiver::new(42, 2);
        let mut buf = [0u8; 64];
        let mut send = |r: &mut Receiver, flow, cookie, seq, in_window, len: usize| {
            let h = Header {
                flow,
                cookie,
                seq,
                send_ns: 0,
                in_window,
            };
            h.write(&mut buf);
            r.datagram(&buf[..len], 0);
        };
        send(&mut r, 0, 42, 0, true, 64);
        send(&mut r, 1, 42, 0, true, 40);
        send(&mut r, 1, 42, 1, true, 40);
        send(&mut r, 0, 7, 1, true, 64); // another test's cookie
        send(&mut r, 2, 42, 1, true, 64); // no such flow
        send(&mut r, 0, 42, 1, false, 64); // before the sender's window: passed over
        send(&mut r, 0, 42, 1, true, 31); // shorter than the header
        r.datagram(b"garbage", 0);
        let got = r.received();
        assert_eq!((got.datagrams, got.bytes, got.ignored), (3, 144, 4));
        assert_eq!((got.flows.min, got.flows.max, got.flows.conns), (64, 80, 2));
        assert_eq!(got.jitter_flows, 1);
        // The live count has the ramp-up's datagram too.
        assert_eq!(r.totals(), (4, 208));
    }
}
