//! Iometer's topology on one host: which worker has which targets, and
//! which CPU it is pinned to (docs/disk.md, "Targets and workers").
//!
//! By default every target gets `workers` workers of its own (Iometer's
//! "one worker per target"); with `spread`, `workers` workers each have
//! every target, I/Os going round-robin over them with `qd` outstanding
//! on each. Workers are pinned to `cpus` round-robin; `workers = 0` means
//! one worker per CPU of that list (every online CPU if none is given),
//! per target unless spread.

/// One worker's share of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Places in the run's target list.
    pub targets: Vec<usize>,
    /// The CPU it is pinned to, if any.
    pub cpu: Option<u32>,
}

/// The workers of a run over `ntargets` targets. `online` is the CPU list
/// `workers = 0` falls back to when `cpus` is None.
pub fn assign(
    ntargets: usize,
    workers: u32,
    spread: bool,
    cpus: Option<&[u32]>,
    online: &[u32],
) -> Vec<Assignment> {
    let per_core = workers == 0;
    let pins: Option<&[u32]> = match cpus {
        Some(c) => Some(c),
        None if per_core => Some(online),
        None => None,
    };
    let n = match (per_core, pins) {
        (true, Some(p)) => p.len().max(1),
        _ => workers.max(1) as usize,
    };
    let groups: Vec<Vec<usize>> = if spread {
        vec![(0..ntargets).collect(); n]
    } else {
        (0..ntargets).flat_map(|t| vec![vec![t]; n]).collect()
    };
    (groups.into_iter().enumerate())
        .map(|(i, targets)| Assignment {
            targets,
            cpu: pins.filter(|p| !p.is_empty()).map(|p| p[i % p.len()]),
        })
        .collect()
}

/// For each worker and each of its targets: its place among that target's
/// workers and how many the target has (where its sequential stream
/// starts).
pub fn places(workers: &[Assignment], ntargets: usize) -> Vec<Vec<(u32, u32)>> {
    let mut count = vec![0u32; ntargets];
    let placed: Vec<Vec<u32>> = workers
        .iter()
        .map(|w| {
            (w.targets.iter())
                .map(|&t| {
                    count[t] += 1;
                    count[t] - 1
                })
                .collect()
        })
        .collect();
    (workers.iter().zip(placed))
        .map(|(w, p)| {
            (w.targets.iter().zip(p))
                .map(|(&t, i)| (i, count[t]))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(a: &[Assignment]) -> Vec<(Vec<usize>, Option<u32>)> {
        a.iter().map(|w| (w.targets.clone(), w.cpu)).collect()
    }

    #[test]
    fn a_worker_per_target_or_spread() {
        // Iometer's study: one worker per target, four targets.
        let a = assign(4, 1, false, None, &[0, 1]);
        let want: Vec<_> = (0..4).map(|t| (vec![t], None)).collect();
        assert_eq!(shape(&a), want);
        // Two workers per target, pinned round-robin over CPUs 2 and 3.
        let a = assign(2, 2, false, Some(&[2, 3]), &[0, 1, 2, 3]);
        assert_eq!(
            shape(&a),
            [
                (vec![0], Some(2)),
                (vec![0], Some(3)),
                (vec![1], Some(2)),
                (vec![1], Some(3))
            ]
        );
        // Spread: every worker has every target.
        let a = assign(3, 2, true, None, &[0]);
        assert_eq!(shape(&a), [(vec![0, 1, 2], None), (vec![0, 1, 2], None)]);
    }

    /// `workers = 0`: a worker per CPU, pinned, over the online CPUs
    /// unless `cpus` says which.
    #[test]
    fn a_worker_per_core() {
        let a = assign(2, 0, true, None, &[0, 1, 2]);
        assert_eq!(
            shape(&a),
            [
                (vec![0, 1], Some(0)),
                (vec![0, 1], Some(1)),
                (vec![0, 1], Some(2))
            ]
        );
        let a = assign(1, 0, false, Some(&[5, 7]), &[0, 1]);
        assert_eq!(shape(&a), [(vec![0], Some(5)), (vec![0], Some(7))]);
    }

    #[test]
    fn places_count_each_targets_workers() {
        let a = assign(2, 2, false, None, &[0]);
        assert_eq!(
            places(&a, 2),
            [vec![(0, 2)], vec![(1, 2)], vec![(0, 2)], vec![(1, 2)]]
        );
        let a = assign(2, 3, true, None, &[0]);
        assert_eq!(places(&a, 2)[2], [(2, 3), (2, 3)]);
    }
}
