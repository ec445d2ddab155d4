//! `iotoll net serve | stream | rr | udp | crr | cc`.

use crate::usage;
use anyhow::Result;
use clap::{Args, Subcommand};
use iotoll_model::{parse_duration, parse_rate, parse_size};
use iotoll_net::auth::Key;
use iotoll_net::start::ServeOptions;
use iotoll_net::tls::Cipher;
use iotoll_net::{ClientSpec, Dir, Limits, TestKind};
use iotoll_run::signals;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum NetCmd {
    /// Run the endpoint that stream and rr tests connect to.
    Serve(ServeArgs),
    /// TCP goodput: bulk transfer over N connections, with CPU at both ends.
    Stream(Box<StreamArgs>),
    /// Request/response: transaction rate and round-trip latency.
    Rr(Box<RrArgs>),
    /// UDP: offered rate, goodput, loss, jitter, out-of-order and duplicates, with CPU at both ends.
    Udp(Box<UdpArgs>),
    /// Connection rate with data: connect, request, response, close per transaction (netperf TCP_CRR).
    Crr(Box<CrrArgs>),
    /// Connection rate: connect and close (netperf TCP_CC).
    Cc(Box<CcArgs>),
}

/// A comma-separated list of local addresses.
#[derive(Clone)]
pub struct BindList(Vec<IpAddr>);

/// `--conns N`: a count of at least 1; each kind states its maximum
/// (clap's own message was "-1 is not in 0..=4294967295").
fn conns_arg(s: &str) -> Result<u32, String> {
    let most = "at most 10000 for stream and rr, 1024 UDP flows, 1000 crr/cc clients";
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 1 => u32::try_from(n).map_err(|_| format!("{n}: {most}")),
        Ok(n) => Err(format!("{n}: at least 1 ({most})")),
        Err(_) => Err(format!("{s}: not a whole number")),
    }
}

fn bind_arg(s: &str) -> Result<BindList, String> {
    let ip = |a: &str| {
        a.trim()
            .parse()
            .map_err(|_| format!("'{a}' is not an IP address"))
    };
    s.split(',').map(ip).collect::<Result<_, _>>().map(BindList)
}

#[derive(Args)]
#[command(
    after_help = "The endpoint serves one test at a time; a test request that arrives while a test runs is told the endpoint is busy (clients retry for --busy-wait, 10 s by default).
Connections still in their handshake never make it busy: at most 16 per source address and 128 in all, the oldest dropped first.
With --auth-key, clients must prove the same pre-shared key (HMAC-SHA256 challenge-response, both directions), and every control message after that is sealed (MAC and sequence number under a per-connection key). Without a key, anyone on the path can rewrite the endpoint's figures and the certificate a --tls client pins."
)]
pub struct ServeArgs {
    /// Address and port to listen on [default: [::]:7575, all IPv6 and IPv4 addresses].
    #[arg(long, value_name = "ADDR[:PORT]")]
    listen: Option<String>,
    /// File holding a pre-shared key (at least 16 bytes) clients must prove.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    /// Serve one client, then exit.
    #[arg(long)]
    once: bool,
    /// Most data connections a test may ask for.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_conns: u32,
    /// Longest test (ramp + time) a client may ask for.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "1h")]
    max_time: Duration,
    /// Largest message, request or response a client may ask for.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "16m")]
    max_msg: u64,
    /// How long a connected client may take for each handshake message.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "5s")]
    handshake_timeout: Duration,
    /// Refuse tests that ask for TLS (--tls), e.g. to keep cipher work off this host.
    #[arg(long)]
    no_tls: bool,
}

/// Flags every client test shares.
#[derive(Args)]
pub struct CommonArgs {
    /// The endpoint: HOST[:PORT] (port 7575 by default; [v6]:port for IPv6).
    #[arg(value_name = "HOST[:PORT]")]
    peer: String,
    /// Data connections.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = conns_arg
    )]
    conns: u32,
    #[command(flatten)]
    window: crate::Window,
    /// File holding the endpoint's pre-shared key: the endpoint proves it, and seals every control message (its report, data port and certificate) with it. Without one, anyone on the path can forge them.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    /// Engine threads [default: one per core].
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// How long to keep retrying an endpoint that is busy with another test (0s: fail at once).
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10s")]
    busy_wait: Duration,
    /// TLS 1.3 on every data connection: the endpoint makes a certificate for the test, the client pins it through the control connection (sealed with --auth-key; without a key anyone on the path could swap it). Goodput counts payload only; CPU shows what the encryption costs.
    #[arg(long)]
    tls: bool,
    /// The TLS cipher: aes-128-gcm, aes-256-gcm or chacha20-poly1305 (implies --tls).
    #[arg(long, value_name = "CIPHER")]
    tls_cipher: Option<Cipher>,
    #[command(flatten)]
    measure: crate::MeasureOpts,
}

/// Exit statuses of the client tests, as `disk run` documents its own
/// (a macro: `concat!` takes only literals).
macro_rules! net_exit {
    () => {
        "Exit status: 0 done, 1 the endpoint could not be reached, refused the test or the test failed, 2 bad input, 130 interrupted (Ctrl-C; the figures measured so far are printed)."
    };
}

#[derive(Args)]
#[command(after_help = concat!(
    "Start the endpoint on the peer first (`iotoll net serve`, port 7575). Goodput counts payload only; both ends' whole-host CPU is read on the same window.
Examples:
  iotoll net stream 192.0.2.10 --conns 4 --time 30s
  iotoll net stream 192.0.2.10 --dir bidir --conns 100 --msg 64k --config mtu9000
  iotoll net stream [2001:db8::10]:7575 --dir rx --sockbuf 256k --json > rx.json
",
    net_exit!()
))]
pub struct StreamArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// tx: this host sends; rx: the endpoint sends; bidir: N connections each way.
    #[arg(long, value_name = "DIR", default_value = "tx")]
    dir: Dir,
    /// Size of each write (1 to 16m).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "128k", allow_hyphen_values = true)]
    msg: u64,
    /// SO_SNDBUF and SO_RCVBUF at both ends [default: kernel autotuning].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    sockbuf: Option<u64>,
    /// TCP_NODELAY on the data connections.
    #[arg(long)]
    nodelay: bool,
    /// Local addresses to spread the connections over, round-robin (multi-adapter tests).
    #[arg(long, value_name = "ADDR[,ADDR...]", value_parser = bind_arg)]
    bind: Option<BindList>,
    /// The receiving ends check every byte against the sender's pattern; a difference fails the test.
    #[arg(long)]
    verify: bool,
}

#[derive(Args)]
#[command(after_help = concat!(
    "Each connection keeps --burst requests outstanding; a transaction is one request and its whole response. One-way latency is 1e6 / (transactions/s per connection) / 2 (netperf's TCP_RR).
Examples:
  iotoll net rr 192.0.2.10
  iotoll net rr 192.0.2.10 --req 1400 --resp 1400 --conns 8 --burst 4 --time 1m
",
    net_exit!()
))]
pub struct RrArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    sizes: Exchange,
    /// Outstanding transactions per connection.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    burst: u32,
}

#[derive(Args)]
#[command(after_help = concat!(
    "Each datagram carries iotoll's 32-byte header (flow, sequence number, send time, the test's cookie); the receiver counts the datagrams each sender sent inside its window, so loss is the sender's count minus the receiver's, exactly. Jitter is RFC 3550's (as iperf3 reports it). Rates are bits per second of UDP payload (the header included, IP and UDP headers not), decimal: 500m = 500,000,000 bit/s.
Examples:
  iotoll net udp 192.0.2.10 --rate 500m
  iotoll net udp 192.0.2.10 --dir bidir --conns 4 --rate 1g --size 8000
  iotoll net udp 192.0.2.10 --size 64 --time 30s --json > small.json
",
    net_exit!()
))]
pub struct UdpArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// tx: this host sends; rx: the endpoint sends; bidir: both, on the same flows.
    #[arg(long, value_name = "DIR", default_value = "tx")]
    dir: Dir,
    /// Offered rate per direction, all flows together: bits/s of UDP payload (500m, 1g; decimal). Paced by a token bucket on the monotonic clock [default: unlimited].
    #[arg(long, value_name = "RATE", value_parser = parse_rate, allow_hyphen_values = true)]
    rate: Option<u64>,
    /// Datagram payload, 32 to 65507 bytes (1472: a 1500-byte MTU less the IPv4 and UDP headers).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1472", allow_hyphen_values = true)]
    size: u64,
    /// SO_SNDBUF and SO_RCVBUF of every flow socket at both ends [default: the kernel's].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    sockbuf: Option<u64>,
    /// Local addresses to spread the flows over, round-robin.
    #[arg(long, value_name = "ADDR[,ADDR...]", value_parser = bind_arg)]
    bind: Option<BindList>,
}

#[derive(Args)]
#[command(after_help = concat!(
    "Each of --conns clients opens one connection after another to a port the endpoint opened for this test: connect, send the request (after the test's 8-byte token), read the whole response, close. Failures are counted by cause (refused, reset, timeout, ports exhausted). This host closes first, so TIME_WAIT is here; --linger0 closes with a reset instead. The endpoint keeps serving other tests meanwhile.
Examples:
  iotoll net crr 192.0.2.10 --conns 8
  iotoll net crr 192.0.2.10 --conns 32 --req 100 --resp 8k --linger0 --json > crr.json
",
    net_exit!()
))]
pub struct CrrArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    sizes: Exchange,
    #[command(flatten)]
    conn: ConnArgs,
}

/// A transaction's sizes (rr and crr; crr sends its 8-byte token before the request).
#[derive(Args)]
pub struct Exchange {
    /// Request size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1", allow_hyphen_values = true)]
    req: u64,
    /// Response size.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1", allow_hyphen_values = true)]
    resp: u64,
}

#[derive(Args)]
#[command(after_help = concat!(
    "Each of --conns clients connects and closes, one connection after another, to a port the endpoint opened for this test (only the client that asked for it over the control connection knows it). Failures are counted by cause. This host closes first, so TIME_WAIT is here; --linger0 closes with a reset instead.
Examples:
  iotoll net cc 192.0.2.10 --conns 8 --linger0
",
    net_exit!()
))]
pub struct CcArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    conn: ConnArgs,
}

/// Flags of the connection-rate tests.
#[derive(Args)]
pub struct ConnArgs {
    /// Close with a reset (SO_LINGER 0): no TIME_WAIT, so the local port range never runs out.
    #[arg(long)]
    linger0: bool,
    /// Local addresses to spread the clients over, round-robin (more addresses: more ports).
    #[arg(long, value_name = "ADDR[,ADDR...]", value_parser = bind_arg)]
    bind: Option<BindList>,
}

pub fn main(cmd: NetCmd) -> Result<()> {
    match cmd {
        NetCmd::Serve(a) => serve(a),
        NetCmd::Stream(a) => client(&a.common, |base| ClientSpec {
            kind: TestKind::Stream,
            dir: a.dir,
            msg: a.msg,
            sockbuf: a.sockbuf,
            nodelay: a.nodelay,
            bind: a.bind.clone().map(|b| b.0).unwrap_or_default(),
            verify: a.verify,
            ..base
        }),
        NetCmd::Rr(a) => client(&a.common, |base| ClientSpec {
            kind: TestKind::Rr,
            req: a.sizes.req,
            resp: a.sizes.resp,
            burst: a.burst,
            ..base
        }),
        NetCmd::Udp(a) => client(&a.common, |base| ClientSpec {
            kind: TestKind::Udp,
            dir: a.dir,
            msg: a.size,
            rate: a.rate,
            sockbuf: a.sockbuf,
            bind: a.bind.clone().map(|b| b.0).unwrap_or_default(),
            ..base
        }),
        NetCmd::Crr(a) => client(&a.common, |base| ClientSpec {
            kind: TestKind::Crr,
            req: a.sizes.req,
            resp: a.sizes.resp,
            linger0: a.conn.linger0,
            bind: a.conn.bind.clone().map(|b| b.0).unwrap_or_default(),
            ..base
        }),
        NetCmd::Cc(a) => client(&a.common, |base| ClientSpec {
            kind: TestKind::Cc,
            linger0: a.conn.linger0,
            bind: a.conn.bind.clone().map(|b| b.0).unwrap_or_default(),
            ..base
        }),
    }
}

fn base_spec(c: &CommonArgs) -> Result<ClientSpec> {
    Ok(ClientSpec {
        peer: c.peer.clone(),
        conns: c.conns,
        ramp: c.window.ramp,
        time: c.window.time,
        key: (c.auth_key.as_deref().map(Key::load).transpose()).map_err(usage)?,
        config: c.measure.config.clone(),
        threads: c.threads,
        busy_wait: c.busy_wait,
        tls: c
            .tls_cipher
            .or(c.tls.then_some(iotoll_net::tls::DEFAULT_CIPHER)),
        ..ClientSpec::default()
    })
}

/// A client test: `spec` sets the test's own flags over the common ones
/// (whose key file is read first).
fn client(c: &CommonArgs, spec: impl FnOnce(ClientSpec) -> ClientSpec) -> Result<()> {
    let spec = spec(base_spec(c)?);
    anyhow::ensure!(c.threads != Some(0), usage("--threads must be positive"));
    crate::measure(&c.measure, |ctl| iotoll_net::run(&spec, ctl))
}

fn serve(a: ServeArgs) -> Result<()> {
    let (cfg, listener) = iotoll_net::start::start(&ServeOptions {
        listen: a.listen.as_deref(),
        auth_key: a.auth_key.as_deref(),
        once: a.once,
        limits: Limits {
            max_conns: a.max_conns,
            max_time: a.max_time,
            max_msg: a.max_msg,
        },
        handshake: a.handshake_timeout,
        tls: !a.no_tls,
    })
    .map_err(crate::usage_or)?;
    let flag = signals::install();
    iotoll_net::serve_on(listener, &cfg, &flag).map_err(crate::usage_or)
}
