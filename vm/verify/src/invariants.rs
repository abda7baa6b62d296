//! Structural analysis: semi-positive place and transition invariants by the Farkas
//! algorithm (Fourier-Motzkin elimination on `[C | I]`, keeping only rows of minimal support),
//! and the place bounds they prove.
//!
//! A P-invariant `y >= 0` with `y^T C = 0` keeps `y . M` constant in every reachable marking,
//! so a place `p` with `y_p > 0` holds at most `floor(y . M0 / y_p)` tokens. When the
//! invariants' supports cover every place, the net is bounded for every initial marking
//! (structurally bounded) and this needs no state space. A T-invariant `x >= 0` with `C x = 0`
//! is a multiset of firings that reproduces the marking; a net without one has no cycle in
//! any reachability graph, so it terminates.

/// Minimal-support semi-positive invariants, or `None` when the elimination gave up (more
/// than `limit` intermediate rows, more than `budget` units of work, or an arithmetic
/// overflow). A unit of work is one row read by the adjacency test or one entry of a row
/// built (a few nanoseconds each); counting work instead of time keeps the outcome
/// independent of the machine and its load.
pub fn farkas(
    matrix: &[Vec<i64>],
    columns: usize,
    limit: usize,
    budget: u64,
) -> Option<Vec<Vec<u64>>> {
    let n = matrix.len();
    // The first elimination alone charges `n x columns` (below): past the budget, give up
    // before the tableau is built (it has `n x (columns + n)` entries). Past
    // [`MAX_CELLS`], give up whatever the budget: the tableau would not fit in memory.
    if !fits(n, columns + n) || (n as u64).saturating_mul(columns as u64) > budget {
        return None;
    }
    let mut work = 0u64;
    let words = n.div_ceil(64).max(1);
    // A row: its remaining matrix part and its combination part (sparse-ish dense vectors).
    let mut rows: Vec<Row> = (0..n)
        .map(|i| {
            let mut comb = vec![0i64; n];
            comb[i] = 1;
            let mut support = vec![0u64; words];
            support[i / 64] |= 1 << (i % 64);
            Row {
                a: matrix[i].clone(),
                comb,
                support,
            }
        })
        .collect();
    let mut remaining: Vec<usize> = (0..columns).collect();
    while !remaining.is_empty() {
        work = work.saturating_add((rows.len() * remaining.len()) as u64);
        // Eliminate next the column that creates the fewest new rows (the usual heuristic of
        // the Farkas / double description method; the result does not depend on the order,
        // only the intermediate sizes do).
        let (at, j) = remaining
            .iter()
            .enumerate()
            .map(|(at, &j)| {
                let pos = rows.iter().filter(|r| r.a[j] > 0).count();
                let neg = rows.iter().filter(|r| r.a[j] < 0).count();
                ((pos * neg) as i64 - (pos + neg) as i64, at, j)
            })
            .min()
            .map(|(_, at, j)| (at, j))?;
        remaining.swap_remove(at);
        let (zero, nonzero): (Vec<Row>, Vec<Row>) = rows.into_iter().partition(|r| r.a[j] == 0);
        let (pos, neg): (Vec<Row>, Vec<Row>) = nonzero.into_iter().partition(|r| r.a[j] > 0);
        let mut next = Vec::with_capacity(zero.len());
        let scan = (zero.len() + pos.len() + neg.len()) as u64;
        // A built row: its entries and three allocations.
        let build = (columns + n) as u64 + 64;
        for p in &pos {
            for q in &neg {
                // The adjacency test reads every row at worst; a built row writes `build`.
                work += scan;
                if work > budget {
                    return None;
                }
                let support: Vec<u64> = p
                    .support
                    .iter()
                    .zip(&q.support)
                    .map(|(x, y)| x | y)
                    .collect();
                // The combinatorial adjacency test of the double description method: the
                // combination has minimal support only if no other row's support lies inside
                // the union of the two supports.
                let covered = |r: &Row| {
                    !std::ptr::eq(r, p)
                        && !std::ptr::eq(r, q)
                        && r.support.iter().zip(&support).all(|(a, b)| a & !b == 0)
                };
                if zero.iter().chain(&pos).chain(&neg).any(covered) {
                    continue;
                }
                let (cp, cq) = (-q.a[j], p.a[j]);
                let mut a = Vec::with_capacity(p.a.len());
                for k in 0..p.a.len() {
                    a.push(
                        p.a[k]
                            .checked_mul(cp)?
                            .checked_add(q.a[k].checked_mul(cq)?)?,
                    );
                }
                let mut comb = Vec::with_capacity(n);
                for k in 0..n {
                    comb.push(
                        p.comb[k]
                            .checked_mul(cp)?
                            .checked_add(q.comb[k].checked_mul(cq)?)?,
                    );
                }
                work += build;
                let mut r = Row { a, comb, support };
                r.normalize();
                next.push(r);
                if next.len() + zero.len() > limit || !fits(next.len() + zero.len(), columns + n) {
                    return None;
                }
            }
        }
        next.extend(zero);
        // `minimal` compares each row with the rows kept before it.
        work = work.saturating_add((next.len() as u64).pow(2) / 2);
        if work > budget {
            return None;
        }
        rows = minimal(next);
    }
    let mut out: Vec<Vec<u64>> = rows
        .into_iter()
        .map(|r| r.comb.into_iter().map(|x| x.max(0) as u64).collect())
        .collect();
    // A canonical order (the elimination order changes the order of the rows, not the set).
    out.sort_by(|x, y| y.cmp(x));
    Some(out)
}

/// The most entries a Farkas tableau may hold (rows x (columns + the first step's rows), 8
/// bytes each: 2 GiB), asked for or not: a larger net's invariants are not computed (the
/// report says so) rather than the machine running out of memory.
pub const MAX_CELLS: u64 = 1 << 28;

/// Whether `rows` rows of `width` entries stay under [`MAX_CELLS`].
fn fits(rows: usize, width: usize) -> bool {
    (rows as u64).saturating_mul(width as u64) <= MAX_CELLS
}

/// Whether the invariants of a net of `places` and `transitions` may be computed at all: its
/// incidence matrix and both tableaux (places x (transitions + places), transitions x
/// (places + transitions)) fit under [`MAX_CELLS`].
pub fn computable(places: usize, transitions: usize) -> bool {
    let width = places.saturating_add(transitions);
    fits(places, width) && fits(transitions, width)
}

struct Row {
    a: Vec<i64>,
    comb: Vec<i64>,
    support: Vec<u64>,
}

impl Row {
    fn normalize(&mut self) {
        let g = self
            .a
            .iter()
            .chain(&self.comb)
            .fold(0u64, |g, &x| gcd(g, x.unsigned_abs()));
        if g > 1 {
            let g = g as i64;
            self.a
                .iter_mut()
                .chain(self.comb.iter_mut())
                .for_each(|x| *x /= g);
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Drops rows whose support strictly contains another's, and duplicates of a support.
fn minimal(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by_key(|r| r.support.iter().map(|w| w.count_ones()).sum::<u32>());
    let mut keep: Vec<Row> = Vec::with_capacity(rows.len());
    for r in rows {
        let dominated = keep
            .iter()
            .any(|k| k.support.iter().zip(&r.support).all(|(a, b)| a & !b == 0));
        if !dominated {
            keep.push(r);
        }
    }
    keep
}

/// Place and transition invariants of a net with incidence matrix `c` (rows = places).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invariants {
    /// Minimal semi-positive P-invariants (weights per place); `None` if not computed.
    pub p: Option<Vec<Vec<u64>>>,
    /// Minimal semi-positive T-invariants (counts per transition); `None` if not computed.
    pub t: Option<Vec<Vec<u64>>>,
}

/// The limit on intermediate rows of the elimination.
pub const FARKAS_LIMIT: usize = 20_000;

/// All invariants of a net with incidence matrix `c` (rows = places), with no work budget.
pub fn invariants(c: &[Vec<i64>], transitions: usize) -> Invariants {
    Invariants {
        p: p_invariants(c, transitions, u64::MAX),
        t: t_invariants(c, transitions, u64::MAX),
    }
}

/// The minimal P-invariants, or `None` past `budget` units of work (see [`farkas`]).
pub fn p_invariants(c: &[Vec<i64>], transitions: usize, budget: u64) -> Option<Vec<Vec<u64>>> {
    farkas(c, transitions, FARKAS_LIMIT, budget)
}

/// The minimal T-invariants, or `None` past `budget` units of work (see [`farkas`]).
pub fn t_invariants(c: &[Vec<i64>], transitions: usize, budget: u64) -> Option<Vec<Vec<u64>>> {
    let ct: Vec<Vec<i64>> = (0..transitions)
        .map(|t| c.iter().map(|row| row[t]).collect())
        .collect();
    farkas(&ct, c.len(), FARKAS_LIMIT, budget)
}

/// Per place, the bound the P-invariants prove for initial marking `m0` (`None`: not covered).
pub fn place_bounds(p_invariants: &[Vec<u64>], m0: &[u64]) -> Vec<Option<u64>> {
    let mut bounds = vec![None; m0.len()];
    for y in p_invariants {
        let total: u128 = y.iter().zip(m0).map(|(&a, &b)| a as u128 * b as u128).sum();
        for (p, &w) in y.iter().enumerate() {
            if w > 0 {
                let b = (total / w as u128).min(u64::MAX as u128) as u64;
                bounds[p] = Some(bounds[p].map_or(b, |o: u64| o.min(b)));
            }
        }
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_with_a_fork() {
        // p0 -t0-> p1 -t1-> p0, and t2: p0 + p2 -> p2 (a self loop consuming p0).
        let c = vec![vec![-1, 1, -1], vec![1, -1, 0], vec![0, 0, 0]];
        let inv = invariants(&c, 3);
        let mut p = inv.p.unwrap();
        p.sort();
        // p2 alone (its count never changes) is an invariant; p0 + p1 is not (t2 loses a token).
        assert_eq!(p, vec![vec![0, 0, 1]]);
        assert_eq!(inv.t.unwrap(), vec![vec![1, 1, 0]]);
        assert_eq!(place_bounds(&p, &[1, 0, 1]), vec![None, None, Some(1)]);
    }

    #[test]
    fn over_the_budget_gives_up_and_within_it_is_exact() {
        // A token moving between 6 places in every direction: 409 elementary cycles.
        let n = 6;
        let moves: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .collect();
        let c: Vec<Vec<i64>> = (0..n)
            .map(|p| {
                moves
                    .iter()
                    .map(|&(i, j)| (p == j) as i64 - (p == i) as i64)
                    .collect()
            })
            .collect();
        let all = t_invariants(&c, moves.len(), u64::MAX).unwrap();
        assert_eq!(all.len(), 409);
        assert_eq!(t_invariants(&c, moves.len(), 10_000), None);
        assert_eq!(t_invariants(&c, moves.len(), 1 << 40), Some(all));
        assert_eq!(
            p_invariants(&c, moves.len(), 10_000),
            Some(vec![vec![1; n]])
        );
    }

    #[test]
    fn weighted_conservation() {
        // t0: 2 p0 -> p1; t1: p1 -> 2 p0. Invariant p0 + 2 p1.
        let c = vec![vec![-2, 2], vec![1, -1]];
        let inv = invariants(&c, 2);
        assert_eq!(inv.p.clone().unwrap(), vec![vec![1, 2]]);
        assert_eq!(
            place_bounds(&inv.p.unwrap(), &[4, 0]),
            vec![Some(4), Some(2)]
        );
    }
}
