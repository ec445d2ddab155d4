//! UDP tests (`iotoll net udp`): datagrams of a fixed size on one socket per
//! flow at each end, paced by a token bucket or unlimited, counted by the
//! receiver by sequence number (loss against the sender's own count,
//! out-of-order, duplicates) with RFC 3550 jitter. The control connection,
//! the window and both ends' CPU are the stream tests'.

mod account;
pub(crate) mod client;
mod engine;
mod pace;
mod result;
pub(crate) mod server;
mod wire;

pub use account::{Received, Sent};
pub use engine::{UdpEngine, UdpOut, UdpParams};
pub use result::{udp_metrics, Way};
pub use server::udp_socket;
pub use wire::{DEFAULT_DATAGRAM, HEADER, MAX_DATAGRAM};

use crate::proto::{Dir, TestParams};
use crate::ClientSpec;

/// Most flows per direction: each is a socket at both ends, and the
/// endpoint's report holds their totals only.
pub const MAX_FLOWS: u32 = 1024;

/// The datagram size's bounds, named by `flag`.
fn check_size(flag: &str, size: u64) -> Result<(), String> {
    if !(HEADER as u64..=MAX_DATAGRAM).contains(&size) {
        return Err(format!(
            "{flag} must be between {HEADER} bytes (iotoll's datagram header: flow, sequence number, timestamp, test cookie) and {MAX_DATAGRAM} (the largest UDP payload over IPv4), got {size}"
        ));
    }
    Ok(())
}

fn check_flows(flag: &str, conns: u32) -> Result<(), String> {
    if conns == 0 || conns > MAX_FLOWS {
        return Err(format!(
            "{flag} must be between 1 and {MAX_FLOWS} for UDP, got {conns}"
        ));
    }
    Ok(())
}

/// The client's checks of a UDP test, in its flags' words.
pub fn validate(s: &ClientSpec) -> Result<(), String> {
    check_size("--size", s.msg)?;
    check_flows("--conns", s.conns)?;
    if s.tls.is_some() {
        return Err("--tls applies to TCP tests (net stream, net rr), not UDP".into());
    }
    if s.verify {
        return Err("--verify applies to stream tests only".into());
    }
    if s.rate == Some(0) {
        return Err("--rate must be positive (leave it out for unlimited)".into());
    }
    if let Some(rate) = s.rate {
        // Below one datagram per window the offered rate is whatever one
        // datagram or none makes it: 6 times --rate 1k in a 2 s window.
        let every_s = (s.msg * 8) as f64 / rate as f64;
        if every_s > s.time.as_secs_f64() {
            return Err(format!(
                "--rate {rate} bit/s sends one {}-byte datagram every {every_s:.1} s, longer than the {:.1} s window: raise --rate or --time, or lower --size",
                s.msg,
                s.time.as_secs_f64()
            ));
        }
    }
    if s.nodelay {
        return Err("--nodelay is a TCP option; UDP has no Nagle delay".into());
    }
    if s.threads.is_some() {
        return Err("--threads applies to TCP tests: a UDP test runs one sending and one receiving thread at each end".into());
    }
    Ok(())
}

/// The endpoint's checks of a UDP test request.
pub(crate) fn validate_params(p: &TestParams) -> Result<(), String> {
    check_size("size", p.msg)?;
    check_flows("conns", p.conns)?;
    if p.tls.is_some() || p.verify || p.nodelay {
        return Err("tls, verify and nodelay do not apply to UDP tests".into());
    }
    if p.rate == Some(0) {
        return Err("rate must be positive".into());
    }
    if p.udp_ports.len() != p.conns as usize || p.udp_ports.contains(&0) {
        return Err(format!(
            "a UDP test needs the client's {} flow port(s), got {}",
            p.conns,
            p.udp_ports.len()
        ));
    }
    Ok(())
}

/// The checks of a UDP test placed on agents (suite `pairs`): each pair's
/// client sends to its server, `rate` per pair; the ports are the agents'.
pub fn validate_placed(p: &TestParams) -> Result<(), String> {
    check_size("size", p.msg)?;
    check_flows("conns", p.conns)?;
    if p.tls.is_some() {
        return Err("tls applies to TCP tests (net-stream, net-rr), not UDP".into());
    }
    if p.verify || p.nodelay {
        return Err("verify and nodelay do not apply to UDP tests".into());
    }
    if p.rate == Some(0) {
        return Err("rate must be positive (leave it out for unlimited)".into());
    }
    if p.dir != Dir::Tx {
        // The receiver counts loss; one direction per pair keeps each
        // pair's sender and receiver on the hosts the pair names.
        return Err(format!(
            "a UDP test across hosts sends from each pair's client to its server (dir = \"tx\"), not {}: for the other way, swap the pair's hosts; for both ways, give a pair each way",
            iotoll_model::spec::word(&p.dir)
        ));
    }
    if !p.udp_ports.is_empty() {
        return Err("udp_ports are a local test's; agents open their own".into());
    }
    Ok(())
}

/// Whether the client sends (tx, bidir) and receives (rx, bidir).
pub(crate) fn client_sends_receives(dir: Dir) -> (bool, bool) {
    (dir != Dir::Rx, dir != Dir::Tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_flows_and_options_are_checked_with_the_flag_named() {
        let ok = ClientSpec::udp();
        assert_eq!(validate(&ok), Ok(()));
        assert_eq!(ok.msg, 1472);
        let err = |s: ClientSpec| validate(&s).unwrap_err();
        for (size, ok_) in [(31, false), (32, true), (65507, true), (65508, false)] {
            let s = ClientSpec {
                msg: size,
                ..ClientSpec::udp()
            };
            assert_eq!(validate(&s).is_ok(), ok_, "{size}");
        }
        // Each flag's refusal names it.
        for (set, want) in [
            ((|s| s.msg = 70000) as fn(&mut ClientSpec), "--size"),
            (|s| s.conns = 0, "--conns"),
            (|s| s.conns = 1025, "1024"),
            (|s| s.rate = Some(0), "--rate"),
            (|s| s.threads = Some(2), "--threads"),
            (|s| s.tls = Some(crate::tls::DEFAULT_CIPHER), "--tls"),
        ] {
            let mut s = ClientSpec::udp();
            set(&mut s);
            assert!(err(s).contains(want), "{want}");
        }
        // 1,472 bytes at 1 kbit/s is one datagram every 11.8 s.
        let slow = |ms| ClientSpec {
            rate: Some(1000),
            time: std::time::Duration::from_millis(ms),
            ..ClientSpec::udp()
        };
        assert!(err(slow(2000)).contains("every 11.8 s, longer than the 2.0 s window"));
        assert_eq!(validate(&slow(12_000)), Ok(()));
        // The endpoint refuses a request without the client's ports.
        let mut p = ClientSpec::udp().params();
        assert!(validate_params(&p).unwrap_err().contains("flow port"));
        p.udp_ports = vec![4000];
        assert_eq!(validate_params(&p), Ok(()));
        p.msg = 10;
        assert!(validate_params(&p).is_err());
    }
}
