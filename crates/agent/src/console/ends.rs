//! Each pair's two ends from the hosts' reports, for the tests whose
//! pairs each end counts (UDP: sent and received; crr/cc: the clients'
//! connections and the server's): every end reported once, by the host
//! that is that end, and checked on its own before the two are compared.

use super::{Console, ConsoleError, Part};
use crate::wire::AgentReport;

/// What a test calls its pairs' counts, in refusals: `counts` ("datagram"),
/// the client's ("datagrams sent") and the server's ("datagrams received").
pub(super) struct Words {
    pub counts: &'static str,
    pub client: &'static str,
    pub server: &'static str,
}

/// One pair's end as a host reported it: its pair, and the client's or the
/// server's counts (a well-formed report has exactly one).
pub(super) type Reported<C, S> = (u32, Option<C>, Option<S>);

/// A pair's two ends: (index of the reporting part, its counts) each.
pub(super) type Pair<C, S> = ((usize, C), (usize, S));

impl Console {
    /// Every pair's two ends. `of` lists a report's ends; `client_ok`
    /// checks a client's counts against its host's window (seconds),
    /// `server_ok` a server's. A host that reports an end it is not, or one
    /// twice, has its report refused by name; a pair without both ends is
    /// an error naming the missing one.
    pub(super) fn pair_ends<C: Clone, S: Clone>(
        &self,
        parts: &[Part],
        pairs: usize,
        words: &Words,
        of: impl Fn(&AgentReport) -> Vec<Reported<C, S>>,
        client_ok: impl Fn(&C, f64) -> Result<(), String>,
        server_ok: impl Fn(&S) -> Result<(), String>,
    ) -> Result<Vec<Pair<C, S>>, ConsoleError> {
        type Got<C, S> = (Option<(usize, C)>, Option<(usize, S)>);
        let mut got: Vec<Got<C, S>> = vec![(None, None); pairs];
        for (i, p) in parts.iter().enumerate() {
            let Some(r) = &p.report else { continue };
            let host = self.hosts[p.host].name.as_str();
            let err =
                |m: String| ConsoleError::host_err(host, format!("its report is refused: {m}"));
            let (served, clients) = p.work.slots();
            let Words {
                counts,
                client,
                server,
            } = words;
            for (pair, c, s) in of(r) {
                // Pairs are numbered from 1 in what users read.
                let k = pair + 1;
                let Some(slot) = got.get_mut(pair as usize) else {
                    return Err(err(format!(
                        "it reported {counts}s of pair {k}, which the test does not have"
                    )));
                };
                let is = |slots: &[crate::wire::PairSlot]| slots.iter().any(|x| x.pair == pair);
                match (c, s) {
                    (Some(c), None) if is(clients) => {
                        client_ok(&c, r.window_s).map_err(|m| err(format!("pair {k}: {m}")))?;
                        if slot.0.replace((i, c)).is_some() {
                            return Err(err(format!("it reported pair {k}'s {client} twice")));
                        }
                    }
                    (None, Some(s)) if is(served) => {
                        server_ok(&s).map_err(|m| err(format!("pair {k}: {m}")))?;
                        if slot.1.replace((i, s)).is_some() {
                            return Err(err(format!("it reported pair {k}'s {server} twice")));
                        }
                    }
                    (Some(_), None) => {
                        return Err(err(format!(
                            "it reported {client} of pair {k}, which it is not the client of"
                        )))
                    }
                    (None, Some(_)) => {
                        return Err(err(format!(
                            "it reported {server} of pair {k}, which it does not serve"
                        )))
                    }
                    _ => {
                        return Err(err(format!(
                            "its count of pair {k} is neither a client's nor a server's"
                        )))
                    }
                }
            }
        }
        (got.into_iter().enumerate())
            .map(|(k, g)| {
                let missing = |end: &str| {
                    ConsoleError::Invalid(format!(
                        "pair {} has no {counts} counts from its {end}",
                        k + 1,
                        counts = words.counts
                    ))
                };
                Ok((
                    g.0.ok_or_else(|| missing("client"))?,
                    g.1.ok_or_else(|| missing("server"))?,
                ))
            })
            .collect()
    }
}
