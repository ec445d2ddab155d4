//! The process's logger, installed by the binary at start: where the
//! libraries' `tracing` events go, one line each on stderr,
//! `iotoll: [PEER: ]MESSAGE`, like everything else the tool says there.
//! The endpoint and the agent (`net serve`, `agent`) log this way, and a
//! client warns this way. `RUST_LOG` sets the level (default `info`;
//! `RUST_LOG=debug` also shows each failed handshake of a flood, which the
//! endpoint otherwise sums up).

use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// Installs the stderr subscriber for the whole process.
pub fn install() {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .event_format(Line)
        .finish()
        .with(filter);
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// The line of an event: its `peer` field first, then its message; other
/// fields are for other subscribers (the sentence already says them).
struct Line;

impl<S, N> FormatEvent<S, N> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut f = Fields::default();
        event.record(&mut f);
        match f.peer {
            Some(peer) => writeln!(w, "iotoll: {peer}: {}", f.message),
            None => writeln!(w, "iotoll: {}", f.message),
        }
    }
}

#[derive(Default)]
struct Fields {
    peer: Option<String>,
    message: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "peer" => self.peer = Some(format!("{value:?}")),
            _ => {}
        }
    }
}
