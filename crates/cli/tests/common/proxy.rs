//! A man in the middle of an endpoint's control connection who does not
//! know the pre-shared key: it relays the handshake (`hello`, `auth`,
//! `auth_ok`) untouched, then hands every later frame to the test, which
//! may rewrite, drop, replay or reorder it.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// Which way a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    ToEndpoint,
    ToClient,
}

/// What the test does with each frame after the handshake: the frames to
/// pass on instead (none drops it, two replays it).
pub type Rewrite = dyn FnMut(Way, Value) -> Vec<Value> + Send;

pub struct Proxy {
    /// Where the client connects.
    pub addr: String,
}

/// The message inside a frame: the envelope's `body` when sealed, else the
/// frame itself.
pub fn msg_of(frame: &Value) -> Value {
    match frame["body"].as_str() {
        Some(body) => serde_json::from_str(body).unwrap_or(Value::Null),
        None => frame.clone(),
    }
}

/// The message's `type`.
pub fn type_of(frame: &Value) -> String {
    msg_of(frame)["type"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Edits the message inside a frame, as a proxy can: a sealed envelope's
/// body is rewritten and its MAC left as it was (the proxy cannot make one).
pub fn edit(frame: &mut Value, f: impl FnOnce(&mut Value)) {
    let mut m = msg_of(frame);
    f(&mut m);
    if frame.get("body").is_some() {
        frame["body"] = Value::String(m.to_string());
    } else {
        *frame = m;
    }
}

fn read_frame(s: &mut TcpStream) -> Option<Value> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn write_frame(s: &mut TcpStream, v: &Value) -> bool {
    s.write_all(&super::server::frame(&v.to_string())).is_ok()
}

/// Relays one direction: `handshake` frames as they are, the rest through
/// `rewrite`; closes the far side's writing half at the end.
fn relay(
    mut from: TcpStream,
    mut to: TcpStream,
    way: Way,
    handshake: usize,
    rewrite: Arc<Mutex<Box<Rewrite>>>,
) {
    let mut n = 0;
    while let Some(f) = read_frame(&mut from) {
        n += 1;
        let out = if n <= handshake {
            vec![f]
        } else {
            (rewrite.lock().unwrap())(way, f)
        };
        if !out.iter().all(|f| write_frame(&mut to, f)) {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

impl Proxy {
    /// Listens on a free loopback port and relays each connection to
    /// `upstream`.
    pub fn start(
        upstream: &str,
        rewrite: impl FnMut(Way, Value) -> Vec<Value> + Send + 'static,
    ) -> Proxy {
        Proxy::start_on("127.0.0.1", upstream, rewrite)
    }

    /// As `start`, listening on `ip`: a loopback address no other test
    /// uses, for a test that must also bind a port the endpoint chose.
    pub fn start_on(
        ip: &str,
        upstream: &str,
        rewrite: impl FnMut(Way, Value) -> Vec<Value> + Send + 'static,
    ) -> Proxy {
        let l = TcpListener::bind((ip, 0)).expect("bind the proxy");
        let addr = l.local_addr().unwrap().to_string();
        let upstream = upstream.to_string();
        let rewrite: Arc<Mutex<Box<Rewrite>>> = Arc::new(Mutex::new(Box::new(rewrite)));
        std::thread::spawn(move || {
            for client in l.incoming().map_while(Result::ok) {
                let Ok(endpoint) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let (c2, e2) = (client.try_clone().unwrap(), endpoint.try_clone().unwrap());
                let r = rewrite.clone();
                // The endpoint's hello and auth_ok; the client's auth.
                std::thread::spawn(move || relay(endpoint, client, Way::ToClient, 2, r));
                let r = rewrite.clone();
                std::thread::spawn(move || relay(c2, e2, Way::ToEndpoint, 1, r));
            }
        });
        Proxy { addr }
    }
}
