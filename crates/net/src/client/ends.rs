//! What every client's result says about its two ends: who the endpoint
//! is, whether it runs on this kernel (and if so, on CPUs of its own), the
//! notes that follow from that, and the document's status at the end. The
//! stream/rr, UDP and connection-rate results are built on it.

use super::drive::Window;
use super::ClientSpec;
use crate::proto::{Identity, ServerReport};
use crate::NetError;
use iotoll_model::result::DEFAULT_INTERFERENCE_PCT;
use iotoll_model::spec::{Disclosure, NetDisclosure, NetSide, TlsDisclosure, Typed};
use iotoll_model::{derive_metrics, CpuSection, ResultDoc, ResultStatus};
use iotoll_probe::ClosedWindow;
use iotoll_run::{interrupted_note, take_cpu_report};
use std::net::{IpAddr, SocketAddr};

/// The two ends of a finished test, as its result describes them.
pub(crate) struct Ends {
    /// This host's side of the disclosure.
    pub local: NetSide,
    /// Same kernel at both ends (loopback, another network namespace or a
    /// container of this host): the boot ids say so, whatever the addresses.
    pub same_host: Option<bool>,
    /// Both ends' CPUs when each is a lab host's own and they do not overlap.
    own_cpus: Option<(Vec<u32>, Vec<u32>)>,
    /// The window interrupted, where the endpoint is, whether its figures
    /// are authenticated: the result's first notes.
    pub notes: Vec<String>,
}

impl Ends {
    /// The ends of the test `spec` ran against `addr` from `local_ip`; the
    /// endpoint, when it runs here, gets its role in this host's window.
    pub(crate) fn of(
        spec: &ClientSpec,
        addr: &SocketAddr,
        local_ip: IpAddr,
        closed: &mut ClosedWindow,
        report: &ServerReport,
        completed: bool,
    ) -> Ends {
        let local = iotoll_probe::sysinfo::network(local_ip);
        let me = local.identity.clone().unwrap_or_default();
        let peer = Identity::from_disclosure(&report.disclosure);
        let same_host = me.same_host(&peer);
        if let Some(pid) = crate::proto::local_pid_of(&me, &peer) {
            closed.mark_endpoint(pid);
        }
        let own_cpus = own_cpus_of(&closed.report, report);
        let mut notes = Vec::new();
        if !completed {
            notes.push(interrupted_note(closed.window_s, spec.time));
        }
        notes.extend(same_host_note(
            &me,
            same_host,
            own_cpus.as_ref(),
            addr,
            local_ip,
        ));
        notes.extend(unauthenticated_note(spec, addr));
        Ends {
            local,
            same_host,
            own_cpus,
            notes,
        }
    }

    /// Completes `doc` (its kind, spec, config, notes and the test's own
    /// metrics) from the window `m`, as every client's result is: the
    /// failure first among the notes, both ends' CPU (each one's error as
    /// a note), the derived metrics, the series, the status and the
    /// disclosure (`tls` in it); then its interference judged. A failed
    /// test is an error that carries its document.
    pub(crate) fn document<O>(
        self,
        m: Window<O>,
        mut doc: ResultDoc,
        failure: Option<String>,
        tls: Option<TlsDisclosure>,
    ) -> Result<ResultDoc, NetError> {
        if let Some(f) = &failure {
            doc.notes.insert(0, format!("failed: {f}"));
        }
        let local = take_cpu_report(m.closed.report, "local CPU", &mut doc.notes);
        if let Some(e) = &m.report.cpu_error {
            doc.notes.push(format!("endpoint CPU not measured: {e}"));
        }
        if let Some(c) = &local {
            c.write_metrics(&mut doc.metrics, "");
        }
        // The endpoint's `remote_*` metrics only when its CPU is its own,
        // not this host's: otherwise they would count this kernel twice
        // (`cpu.remote` stays for transparency either way).
        let remote_own = self.same_host != Some(true) || self.own_cpus.is_some();
        if let Some(c) = m.report.cpu.as_ref().filter(|_| remote_own) {
            c.write_metrics(&mut doc.metrics, "remote_");
        }
        doc.cpu = CpuSection {
            local,
            remote: m.report.cpu,
            same_host: self.same_host,
        };
        derive_metrics(&mut doc.metrics);
        doc.status = match m.completed {
            true => ResultStatus::Complete,
            false => ResultStatus::Interrupted,
        };
        doc.started_at = m.started_at;
        doc.series = m.series;
        doc.disclosure = Some(Disclosure::Net(Typed::from(NetDisclosure {
            local: self.local,
            remote: m.report.disclosure,
            tls,
        })));
        doc.apply_interference_threshold(DEFAULT_INTERFERENCE_PCT);
        match failure {
            Some(msg) => {
                doc.status = ResultStatus::Failed;
                Err(NetError::Failed {
                    msg,
                    doc: Box::new(doc),
                })
            }
            None => Ok(doc),
        }
    }
}

/// Says where the endpoint runs when it is this host.
fn same_host_note(
    me: &Identity,
    same_host: Option<bool>,
    own_cpus: Option<&(Vec<u32>, Vec<u32>)>,
    addr: &SocketAddr,
    local_ip: IpAddr,
) -> Option<String> {
    let local = addr.ip().is_loopback() || local_ip == addr.ip();
    if let Some((here, there)) = own_cpus.filter(|_| same_host == Some(true)) {
        let list = iotoll_probe::affinity::format_cpu_list;
        Some(format!(
            "the endpoint is a lab host on this machine with CPUs of its own ({}; this host's {}): each end's CPU is measured on its own CPUs, so the remote_* metrics are kept; one kernel still shares memory bandwidth, caches and the veth path",
            list(there),
            list(here)
        ))
    } else if same_host == Some(true) {
        Some(format!(
            "the endpoint is on this host (same kernel boot id {}{}): its traffic is host-internal copying, not a NIC, and its CPU is this host's CPU, so the remote_* CPU metrics are left out of metrics (they would count the same kernel twice); cpu.remote is kept for transparency",
            me.boot_id.as_deref().unwrap_or("?"),
            if local {
                ""
            } else {
                ", though at another address: a network namespace or container"
            }
        ))
    } else if local {
        Some("the endpoint is on this host: loopback traffic is host-internal copying, not a NIC, and both ends' CPU is the same host's".into())
    } else {
        None
    }
}

/// Both ends' own CPUs when each was measured on a lab host's own CPUs
/// and they do not overlap: then the endpoint's CPU is not this host's.
fn own_cpus_of(
    local: &Result<iotoll_model::CpuReport, iotoll_probe::ProbeError>,
    r: &ServerReport,
) -> Option<(Vec<u32>, Vec<u32>)> {
    let (l, e) = (local.as_ref().ok(), r.cpu.as_ref());
    let own = |c: Option<&iotoll_model::CpuReport>| c.and_then(|c| c.own_cpus.clone());
    iotoll_model::result::separate_cpus(l, e)
        .then(|| (own(l).unwrap_or_default(), own(e).unwrap_or_default()))
}

/// Says that nothing the endpoint sent can be trusted when the control
/// connection is not keyed and leaves this host (loopback has no path to
/// stand on).
pub(crate) fn unauthenticated_note(spec: &ClientSpec, addr: &SocketAddr) -> Option<String> {
    if spec.key.is_some() || addr.ip().is_loopback() {
        return None;
    }
    let pin = match spec.tls {
        Some(_) => ", and the certificate this host pinned for TLS,",
        None => "",
    };
    Some(format!(
        "not authenticated (no --auth-key): the endpoint's figures in this result{pin} came over a control connection that anyone on the path could have rewritten; run both ends with --auth-key to rule that out"
    ))
}
