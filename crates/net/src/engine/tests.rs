use super::conn::{Conn, ThreadState};
use super::thread::{fail_all, fill_payload, send_len};
use super::*;
use iotoll_run::Phase;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn params(msg: usize) -> EngineParams {
    EngineParams {
        msg,
        req: 1,
        resp: 1,
        burst: 1,
        verify: false,
    }
}

/// Connected loopback pairs: (one end, the other end).
pub(crate) fn pairs(n: usize) -> Vec<(TcpStream, TcpStream)> {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    (0..n)
        .map(|_| {
            let c = TcpStream::connect(a).unwrap();
            let (s, _) = l.accept().unwrap();
            (c, s)
        })
        .collect()
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn payload_is_the_pattern_throughout() {
    let mut b = vec![0u8; (200 << 10) + 7];
    fill_payload(&mut b);
    for (i, x) in b.iter().enumerate() {
        let j = i % (64 << 10);
        assert_eq!(*x, (j as u32).wrapping_mul(2654435761).to_le_bytes()[3]);
    }
    assert!(b.iter().any(|x| *x != 0));
}

#[test]
fn send_buffer_fits_every_role_of_the_thread() {
    let p = params(8 << 20);
    // A bidirectional thread whose first connection receives.
    assert_eq!(send_len([Role::Recv, Role::Send].into_iter(), &p), 8 << 20);
    assert_eq!(send_len([Role::Recv].into_iter(), &p), 1);
    let rr = EngineParams {
        req: 64 << 20,
        resp: 10,
        ..p
    };
    assert_eq!(send_len([Role::RrServer].into_iter(), &rr), 4 << 20);
}

/// Two connections between two ends, each end one engine thread with a
/// receiver and a sender (as the endpoint has in `--dir bidir`), run
/// until 64 MiB went through each end (its sender's and its receiver's
/// bytes); what each end counted. Waits for progress, not a window, so
/// a busy machine only slows it.
pub(crate) fn both_ways(conns: [(DataConn, DataConn); 2], p: EngineParams) -> [EngineOut; 2] {
    let [(a0, b0), (a1, b1)] = conns;
    let a = vec![(a0, Role::Recv), (a1, Role::Send)];
    let b = vec![(b0, Role::Send), (b1, Role::Recv)];
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    let ea = Engine::start_with(a, p, phase.clone(), 1, false).unwrap();
    let eb = Engine::start_with(b, p, phase.clone(), 1, false).unwrap();
    phase.set(Phase::Measure);
    let end = Instant::now() + Duration::from_secs(120);
    while ea.totals().1 < 64 << 20 || eb.totals().1 < 64 << 20 {
        assert!(Instant::now() < end, "no 64 MiB through each end in 120 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    phase.set(Phase::Stop);
    [ea.join(), eb.join()]
}

/// The bug of issue 9: a thread given a receiver first and then a
/// sender of 8 MiB messages sized its send buffer for the receiver and
/// panicked on its first write.
#[test]
fn bidirectional_8m_messages_flow_both_ways() {
    let [(a0, b0), (a1, b1)]: [_; 2] = pairs(2).try_into().unwrap();
    let conns = [(a0.into(), b0.into()), (a1.into(), b1.into())];
    for o in both_ways(conns, params(8 << 20)) {
        assert_eq!(o.errors, 0, "{:?}", o.first_error);
        assert!(o.panic.is_none(), "{:?}", o.panic);
        assert_eq!(o.sockets.len(), 2);
        let rx: u64 = o.per_conn.iter().map(|c| c.1.rx).sum();
        let tx: u64 = o.per_conn.iter().map(|c| c.1.tx).sum();
        assert!(rx > 0 && tx > 0, "rx {rx} tx {tx}");
    }
}

/// `verify`: whole messages of the pattern pass; one altered byte
/// fails the connection, naming where.
#[test]
fn verify_finds_the_altered_byte() {
    let p = EngineParams {
        verify: true,
        ..params(100_000)
    };
    let (x, mut y) = pairs(1).pop().unwrap();
    let phase = Arc::new(PhaseCell::new(Phase::Measure));
    let e = Engine::start_with(vec![(x.into(), Role::Recv)], p, phase.clone(), 1, false).unwrap();
    let mut msg = vec![0u8; 100_000];
    fill_payload(&mut msg);
    y.write_all(&msg).unwrap();
    y.write_all(&msg[..70_000]).unwrap();
    let mut bad = msg[70_000..].to_vec();
    bad[5] ^= 0x80;
    y.write_all(&bad).unwrap();
    wait_for("the receiver to fail", || {
        e.threads[0].1.is_finished() || { e.totals().1 >= 200_000 }
    });
    std::thread::sleep(Duration::from_millis(300));
    phase.set(Phase::Stop);
    let o = e.join();
    assert_eq!(o.errors, 1);
    let err = o.first_error.unwrap_or_default();
    assert!(err.contains("at byte 170005"), "{err}");
    // Counted: the reads before the one that held the altered byte.
    assert!(o.per_conn[0].1.rx <= 170_005, "{}", o.per_conn[0].1.rx);
}

#[test]
fn a_panicking_thread_fails_all_its_connections() {
    let p = params(64 << 10);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (x, y) in pairs(4) {
        a.push((x.into(), Role::Send));
        b.push((y.into(), Role::Recv));
    }
    let phase = Arc::new(PhaseCell::new(Phase::Ramp));
    // Two threads: thread 0 (connections 0 and 2) panics.
    let ea = Engine::start_with(a, p, phase.clone(), 2, true).unwrap();
    let eb = Engine::start_with(b, p, phase.clone(), 2, false).unwrap();
    phase.set(Phase::Measure);
    wait_for("thread 0 to panic", || ea.threads[0].1.is_finished());
    phase.set(Phase::Stop);
    let oa = ea.join();
    let ob = eb.join();
    assert_eq!(oa.errors, 2, "{:?}", oa.first_error);
    let msg = oa.panic.as_deref().unwrap_or_default();
    assert!(msg.contains("engine thread iotoll-net-0 panicked"), "{msg}");
    assert!(msg.contains("injected fault"), "{msg}");
    assert_eq!(oa.first_error.as_deref(), Some(msg));
    assert_eq!(oa.per_conn.len(), 4);
    // Only the surviving thread's sockets are handed back.
    assert_eq!(oa.sockets.len(), 2);
    assert!(ob.panic.is_none());
}

/// An epoll failure ends every open connection of the thread, each
/// counted (before, only `first_error` was set, so nobody reported it).
#[test]
fn epoll_errors_count_every_open_connection() {
    let phase = PhaseCell::new(Phase::Measure);
    let p = params(4096);
    let mut st = ThreadState::new(p, &phase, false);
    let ps = pairs(3);
    let receivers = || -> Vec<Conn<TcpStream>> {
        ps.iter()
            .map(|(x, _)| Conn::new(x.try_clone().unwrap(), Role::Recv, &p))
            .collect()
    };
    let mut conns = receivers();
    // One connection already closed by its peer (counted then).
    conns[1].close(&mut st, Phase::Measure, None);
    assert_eq!(st.errors, 1);
    fail_all(&mut st, &mut conns, "epoll_wait: Bad file descriptor");
    assert_eq!(st.errors, 3, "each open connection counted once");
    assert!(conns.iter().all(|c| !c.open));
    assert_eq!(
        st.first_error.as_deref(),
        Some("peer closed the connection")
    );
    // After the window, ending connections is no failure.
    let phase = PhaseCell::new(Phase::Stop);
    st.phase = &phase;
    let mut more = receivers();
    fail_all(&mut st, &mut more, "epoll_wait: x");
    assert_eq!(st.errors, 3);
    // A fresh thread: the epoll error is what is reported.
    let phase = PhaseCell::new(Phase::Ramp);
    st.phase = &phase;
    st.first_error = None;
    st.errors = 0;
    fail_all(&mut st, &mut more, "epoll_wait: x");
    assert_eq!(st.errors, 0, "already ended");
    let mut fresh = receivers();
    fail_all(&mut st, &mut fresh, "epoll_wait: Bad file descriptor");
    assert_eq!(st.errors, 3);
    assert_eq!(
        st.first_error.as_deref(),
        Some("epoll_wait: Bad file descriptor")
    );
}
