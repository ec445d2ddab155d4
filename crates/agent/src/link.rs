//! One authenticated console–agent connection as both ends use it: a
//! reader thread that opens frames into a channel (stamped with their
//! arrival on the wall clock), a writer shared by whoever sends, and
//! heartbeats every second in both directions, so a peer that is gone
//! (killed, or its link cut, which TCP alone would not notice for minutes)
//! is declared lost after [`LOST_AFTER`] of silence, measured on the
//! monotonic clock (a wall-clock step neither hides nor fakes a loss).

use crate::wire::{self, Session, WireError};
use iotoll_net::proto::{frame, Control};
use serde::{de::DeserializeOwned, Serialize};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How often each end says it is alive.
pub const BEAT: Duration = Duration::from_secs(1);
/// Silence after which the peer is lost: two and a half beats, so one late
/// beat on a loaded host is not a loss, and a cut link is seen within 3 s.
pub const LOST_AFTER: Duration = Duration::from_millis(2500);

/// What the reader thread hands on.
#[derive(Debug)]
pub enum Event<T> {
    /// A message, and the wall clock when it arrived (ns).
    Msg(T, i64),
    /// The connection ended or broke: why.
    Closed(String),
}

/// The sending half, shared.
pub struct Writer {
    stream: TcpStream,
    session: Session,
}

impl Writer {
    pub fn send<T: Serialize>(&mut self, msg: &T) -> std::io::Result<()> {
        use std::io::Write;
        self.stream.write_all(&frame(&self.session.seal(msg)))
    }
}

pub type SharedWriter = Arc<Mutex<Writer>>;

/// Sends on a shared writer; false if the connection is broken.
pub fn send<T: Serialize>(w: &SharedWriter, msg: &T) -> bool {
    w.lock()
        .unwrap_or_else(|p| p.into_inner())
        .send(msg)
        .is_ok()
}

pub struct Link<In> {
    pub writer: SharedWriter,
    pub rx: mpsc::Receiver<Event<In>>,
    /// When the last frame was received: ns after `origin`.
    last_heard: Arc<AtomicU64>,
    origin: Instant,
    closed: Arc<AtomicBool>,
    stream: TcpStream,
}

impl<In: DeserializeOwned + Send + 'static> Link<In> {
    /// Starts the reader and the heartbeat. `filter` sees every message
    /// first, on the reader thread, with its arrival time: what it returns
    /// goes into the channel (an agent answers clock probes and aborts
    /// there, at once, whatever its main thread is doing).
    pub fn start<Out: Serialize + Send + 'static>(
        mut ctl: Control,
        mut session: Session,
        beat: Out,
        mut filter: impl FnMut(In, i64, &SharedWriter) -> Option<In> + Send + 'static,
    ) -> std::io::Result<Link<In>> {
        let stream = ctl.stream.try_clone()?;
        let writer = Arc::new(Mutex::new(Writer {
            stream: ctl.stream.try_clone()?,
            session: session.clone(),
        }));
        let (tx, rx) = mpsc::channel();
        let origin = Instant::now();
        let last_heard = Arc::new(AtomicU64::new(0));
        let closed = Arc::new(AtomicBool::new(false));
        {
            let (w, heard, closed) = (writer.clone(), last_heard.clone(), closed.clone());
            std::thread::Builder::new()
                .name("iotoll-link-rx".into())
                .spawn(move || loop {
                    // Silence is judged by the heartbeat, not here: a
                    // day-long read timeout only bounds a stuck frame.
                    let frame = wire::recv_frame(&mut ctl, Duration::from_secs(86_400));
                    let at = wire::now_ns();
                    let msg = frame
                        .map_err(WireError::from)
                        .and_then(|f| session.open::<In>(&f));
                    match msg {
                        Ok(m) => {
                            heard.store(since(origin), Ordering::Release);
                            if let Some(m) = filter(m, at, &w) {
                                if tx.send(Event::Msg(m, at)).is_err() {
                                    break;
                                }
                            }
                        }
                        Err(e) => {
                            closed.store(true, Ordering::Release);
                            let _ = tx.send(Event::Closed(e.to_string()));
                            break;
                        }
                    }
                })?;
        }
        {
            let (w, closed) = (writer.clone(), closed.clone());
            std::thread::Builder::new()
                .name("iotoll-link-beat".into())
                .spawn(move || {
                    while !closed.load(Ordering::Acquire) {
                        if !send(&w, &beat) {
                            break;
                        }
                        std::thread::sleep(BEAT);
                    }
                })?;
        }
        Ok(Link {
            writer,
            rx,
            last_heard,
            origin,
            closed,
            stream,
        })
    }

    /// Sends one message; false if the connection is broken.
    pub fn send<T: Serialize>(&self, msg: &T) -> bool {
        send(&self.writer, msg)
    }

    /// How long the peer has been silent.
    pub fn silent_for(&self) -> Duration {
        let ns = since(self.origin).saturating_sub(self.last_heard.load(Ordering::Acquire));
        Duration::from_nanos(ns)
    }

    /// Lost: closed, or silent for [`LOST_AFTER`].
    pub fn lost(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.silent_for() > LOST_AFTER
    }

    /// Ends the connection (both threads end with it).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// Monotonic ns from `origin` to now.
fn since(origin: Instant) -> u64 {
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl<In> Drop for Link<In> {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{FromAgent, Side, ToAgent, WALL_STEP_NS};

    /// A link whose peer is connected but says nothing.
    fn link_to_a_silent_peer() -> (Link<FromAgent>, TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (peer, _) = l.accept().unwrap();
        let n = iotoll_net::server::Nonces {
            server: "s".into(),
            client: "c".into(),
        };
        let session = Session::new(None, &n, Side::Console);
        let ctl = Control::new(s).unwrap();
        let link = Link::start(ctl, session, ToAgent::Beat {}, |m, _, _| Some(m)).unwrap();
        (link, peer)
    }

    /// issue 24: silence is measured on the monotonic clock. A wall clock
    /// stepped forward does not lose a peer heard just now; stepped back,
    /// it does not hide one that went silent.
    #[test]
    fn a_wall_clock_step_neither_loses_nor_hides_a_peer() {
        let (link, _peer) = link_to_a_silent_peer();
        WALL_STEP_NS.with(|s| s.set(10_000_000_000));
        assert!(!link.lost(), "lost on a 10 s step forward");
        WALL_STEP_NS.with(|s| s.set(-60_000_000_000));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !link.lost() {
            assert!(
                std::time::Instant::now() < deadline,
                "a silent peer hidden by a 60 s step back"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(link.silent_for() > LOST_AFTER);
        WALL_STEP_NS.with(|s| s.set(0));
    }
}
