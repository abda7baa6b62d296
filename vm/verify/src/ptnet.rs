//! Place/Transition nets: places with initial markings, transitions, weighted arcs.

use pnet_bundle::{PlaceId, TransitionId};

/// Where an element was defined: one-based line and column in the input file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtPlace {
    /// The PNML id.
    pub id: String,
    /// The PNML name (the id if there is none).
    pub name: String,
    pub initial: u64,
    pub pos: Pos,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtTransition {
    pub id: String,
    pub name: String,
    /// Input places with arc weights (sorted by place, one entry per place).
    pub pre: Vec<(PlaceId, u64)>,
    /// Output places with arc weights (sorted by place, one entry per place).
    pub post: Vec<(PlaceId, u64)>,
    pub pos: Pos,
}

/// A P/T net in dense vectors indexed by [`PlaceId`] and [`TransitionId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtNet {
    pub name: String,
    pub places: Vec<PtPlace>,
    pub transitions: Vec<PtTransition>,
}

impl PtNet {
    pub fn place(&self, p: PlaceId) -> &PtPlace {
        &self.places[p.index()]
    }

    pub fn transition(&self, t: TransitionId) -> &PtTransition {
        &self.transitions[t.index()]
    }

    pub fn initial_marking(&self) -> Vec<u64> {
        self.places.iter().map(|p| p.initial).collect()
    }

    /// Adds an arc weight, merging parallel arcs.
    pub fn add_arc(list: &mut Vec<(PlaceId, u64)>, p: PlaceId, w: u64) {
        match list.iter_mut().find(|(q, _)| *q == p) {
            Some((_, v)) => *v = v.saturating_add(w),
            None => {
                list.push((p, w));
                list.sort_by_key(|(q, _)| *q);
            }
        }
    }

    /// Incidence `C[p][t] = post(t,p) - pre(t,p)`, as dense rows per place.
    pub fn incidence(&self) -> Vec<Vec<i64>> {
        let mut c = vec![vec![0i64; self.transitions.len()]; self.places.len()];
        for (t, tr) in self.transitions.iter().enumerate() {
            for &(p, w) in &tr.pre {
                c[p.index()][t] -= w.min(i64::MAX as u64) as i64;
            }
            for &(p, w) in &tr.post {
                c[p.index()][t] += w.min(i64::MAX as u64) as i64;
            }
        }
        c
    }
}
