//! A multi-host test's one-second series: the hosts' own series added up
//! second by second. Every host's window opens at the same scheduled
//! instant (RECORD ON), and each host's seconds count from its opening.

use iotoll_model::{HostFigures, SeriesPoint};

/// One host's measured seconds as running totals from its window's
/// opening: (seconds since the opening, the point's CPU %, a running total
/// per summed field).
struct Curve {
    /// When its window opened, seconds since its workload started.
    open: f64,
    at: Vec<(f64, Option<f64>, [f64; FIELDS])>,
    /// Its ramp-up's mean rates and CPU %.
    ramp: Figures,
}

const FIELDS: usize = 4;
type Field = fn(&SeriesPoint) -> Option<f64>;
/// Summed figures (rates or running totals) and a CPU %.
type Figures = ([f64; FIELDS], Option<f64>);
const SUMMED: [Field; FIELDS] = [|p| p.iops, |p| p.mb_s, |p| p.mbit_s, |p| p.trans_s];

impl Curve {
    fn of(points: &[SeriesPoint]) -> Option<Curve> {
        let first = points.iter().position(|p| p.phase == "measure")?;
        // The measured seconds start at the opening: the point before the
        // first one ended there (within the 10 ms a sliver may be left).
        let open = first.checked_sub(1).map_or(0.0, |i| points[i].t_s);
        let (mut ramp, mut cpu, mut cpu_s, mut prev) = ([0.0; FIELDS], 0.0, 0.0, 0.0);
        for p in &points[..first] {
            let dt = p.t_s - prev;
            for (r, f) in ramp.iter_mut().zip(SUMMED) {
                *r += f(p).unwrap_or(0.0) * dt / open.max(1e-9);
            }
            if let Some(c) = p.cpu_pct {
                (cpu, cpu_s) = (cpu + c * dt, cpu_s + dt);
            }
            prev = p.t_s;
        }
        let ramp = (ramp, (cpu_s > 0.0).then(|| cpu / cpu_s));
        let mut total = [0.0; FIELDS];
        let mut prev = open;
        let mut at = Vec::new();
        for p in points[first..].iter().take_while(|p| p.phase == "measure") {
            for (t, f) in total.iter_mut().zip(SUMMED) {
                *t += f(p).unwrap_or(0.0) * (p.t_s - prev);
            }
            prev = p.t_s;
            at.push((p.t_s - open, p.cpu_pct, total));
        }
        Some(Curve { open, at, ramp })
    }

    fn end(&self) -> f64 {
        self.at.last().map_or(0.0, |a| a.0)
    }

    /// Its running totals `s` seconds after the opening (interpolated
    /// within a point, held after its window's end), and the CPU % of the
    /// point that covers `s`.
    fn total_at(&self, s: f64) -> Figures {
        let mut prev = (0.0, [0.0; FIELDS]);
        for (t, cpu, total) in &self.at {
            if s <= *t {
                let k = if *t > prev.0 {
                    (s - prev.0) / (t - prev.0)
                } else {
                    1.0
                };
                let mut v = [0.0; FIELDS];
                for ((v, a), b) in v.iter_mut().zip(prev.1).zip(total) {
                    *v = a + k * (b - a);
                }
                return (v, *cpu);
            }
            prev = (*t, *total);
        }
        (prev.1, self.at.last().and_then(|a| a.1))
    }
}

/// The hosts' series (`(index in hosts, its points)`) as one measured
/// series: each host's seconds counted from its own window's opening
/// (every host opens at the same scheduled instant), its running totals
/// added up at each whole second and at the longest window's end, so the
/// points add up to what the hosts' series counted. Whole-host CPU is
/// weighted by CPU count with each machine once, as the totals are. The
/// ramp-up is one point, the mean of each host's.
pub fn merge(hosts: &[HostFigures], series: &[(usize, Vec<SeriesPoint>)]) -> Vec<SeriesPoint> {
    let machines: Vec<&HostFigures> = HostFigures::one_per_machine(hosts);
    let counts = |i: usize| machines.iter().any(|m| std::ptr::eq(*m, &hosts[i]));
    let curves: Vec<(usize, Curve)> = series
        .iter()
        .filter_map(|(i, s)| Some((*i, Curve::of(s)?)))
        .collect();
    if curves.is_empty() {
        return Vec::new();
    }
    let end = curves.iter().map(|(_, c)| c.end()).fold(0.0, f64::max);
    let open = curves.iter().map(|(_, c)| c.open).sum::<f64>() / curves.len() as f64;
    let present = |f: usize| {
        series
            .iter()
            .any(|(_, s)| s.iter().any(|p| SUMMED[f](p).is_some()))
    };
    let mut grid: Vec<f64> = (1..)
        .map(f64::from)
        .take_while(|g| *g < end - 0.01)
        .collect();
    grid.push(end);
    // Every curve's figures added up, and its CPU % weighted by its host's
    // CPU count (each machine once).
    let add_up = |of: &dyn Fn(&Curve) -> Figures| {
        let (mut sum, mut w, mut cpu) = ([0.0; FIELDS], 0.0, 0.0);
        for (i, c) in &curves {
            let (v, host_cpu) = of(c);
            for (s, x) in sum.iter_mut().zip(v) {
                *s += x;
            }
            if let Some(x) = host_cpu.filter(|_| counts(*i)) {
                let cpus = hosts[*i].cpus.max(1) as f64;
                (w, cpu) = (w + cpus, cpu + x * cpus);
            }
        }
        (sum, (w > 0.0).then(|| cpu / w))
    };
    let point = |t_s: f64, phase: &str, v: &dyn Fn(usize) -> Option<f64>, cpu_pct| SeriesPoint {
        t_s,
        phase: phase.into(),
        iops: v(0),
        mb_s: v(1),
        mbit_s: v(2),
        trans_s: v(3),
        cpu_pct,
    };
    let mut out = Vec::new();
    // The ramp-up as one point, ending where the measured seconds start.
    let (ramp, cpu) = add_up(&|c| c.ramp);
    if open > 0.0 {
        out.push(point(open, "ramp", &|f| present(f).then_some(ramp[f]), cpu));
    }
    let mut prev = (0.0, [0.0; FIELDS]);
    for g in grid {
        let (total, cpu) = add_up(&|c| c.total_at(g));
        let rate = |f: usize| present(f).then(|| (total[f] - prev.1[f]) / (g - prev.0));
        out.push(point(open + g, "measure", &rate, cpu));
        prev = (g, total);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, cpus: u32, boot: &str) -> HostFigures {
        HostFigures {
            name: name.into(),
            cpus,
            boot_id: Some(boot.into()),
            ..Default::default()
        }
    }

    fn point(t: f64, phase: &str, iops: f64, cpu: f64) -> SeriesPoint {
        SeriesPoint {
            t_s: t,
            phase: phase.into(),
            iops: Some(iops),
            mb_s: None,
            mbit_s: None,
            trans_s: None,
            cpu_pct: Some(cpu),
        }
    }

    /// Throughput adds up second by second, each host counted from its
    /// own window's opening (one started its workload later, one has a
    /// sliver of a last point); CPU is weighted by CPU count, each machine
    /// once (two hosts of one kernel are one machine).
    #[test]
    fn seconds_add_up_and_cpu_counts_each_machine_once() {
        let hosts = [host("d1", 2, "a"), host("d2", 2, "a"), host("d3", 6, "b")];
        let s = |late: f64, iops: f64, cpu: f64, sliver: bool| {
            let mut v = vec![
                point(late + 1.0, "ramp", 5.0, cpu),
                point(late + 2.0, "measure", iops, cpu),
                point(late + 3.0, "measure", iops, cpu),
            ];
            if sliver {
                v[2].t_s -= 0.02;
                v.push(point(late + 3.0, "measure", iops, cpu));
            }
            v
        };
        let merged = merge(
            &hosts,
            &[
                (0, s(0.0, 100.0, 50.0, false)),
                (1, s(0.25, 200.0, 50.0, true)),
                (2, s(0.0, 300.0, 10.0, false)),
            ],
        );
        assert_eq!(merged.len(), 3, "{merged:?}");
        assert_eq!(merged[0].phase, "ramp");
        assert!((merged[0].iops.unwrap() - 15.0).abs() < 1e-9, "{merged:?}");
        for p in &merged[1..] {
            assert!((p.iops.unwrap() - 600.0).abs() < 1e-9, "{p:?}");
            assert_eq!(p.mbit_s, None);
            assert_eq!(p.phase, "measure");
            assert_eq!(p.cpu_pct, Some((50.0 * 2.0 + 10.0 * 6.0) / 8.0));
        }
    }
}
