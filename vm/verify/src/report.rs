//! Verdicts and their rendering (terminal text and JSON), for P/T and coloured nets alike.
//!
//! Verdict semantics:
//! - **deadlock**: a reachable marking in which nothing is enabled that is not a proper end.
//!   For P/T nets every dead marking is a deadlock (the Model Checking Contest's
//!   `ReachabilityDeadlock`; a P/T net has no notion of a workflow's end). For coloured nets
//!   a dead marking is a *proper end* when every remaining token lies on a place that no
//!   transition consumes from (the places behind out ports, sinks, places only read): the job
//!   ends with its results. It is a *deadlock* when tokens are left on a place some
//!   transition consumes from: work that was meant to happen and never will (a join missing
//!   a partner, a condition that stays false).
//! - **bounds**: the largest number of tokens on each place over all reachable markings, and
//!   over all places and markings; **unbounded** when a reachable marking strictly covers one
//!   of its ancestors (coverability witness), which ends the exploration.
//! - **1-safe**: no reachable marking has two tokens on one place.
//! - **dead transitions**: transitions enabled in no reachable marking.
//! - **termination**: no infinite firing sequence, i.e. the (finite) reachability graph is
//!   acyclic; an unbounded net never terminates (its witness can be repeated forever).
//! - **liveness** (P/T nets): every transition can fire again from every reachable marking
//!   (L4), i.e. it fires inside every bottom strongly connected component.

use std::fmt::Write as _;

use serde_json::{Value as Json, json};

/// A verdict that may be unknown (exploration stopped, or not computed under a reduction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Yes,
    No,
    Unknown(String),
}

impl Verdict {
    pub fn from_bool(b: bool) -> Verdict {
        if b { Verdict::Yes } else { Verdict::No }
    }

    pub fn json(&self) -> Json {
        match self {
            Verdict::Yes => Json::Bool(true),
            Verdict::No => Json::Bool(false),
            Verdict::Unknown(_) => Json::Null,
        }
    }

    fn text(&self, yes: &str, no: &str) -> String {
        match self {
            Verdict::Yes => yes.to_string(),
            Verdict::No => no.to_string(),
            Verdict::Unknown(why) => format!("unknown ({why})"),
        }
    }
}

/// A transition as reports name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransitionInfo {
    pub id: String,
    pub name: String,
    /// `file:line:column`.
    pub location: String,
}

/// A firing sequence from the initial marking to a bad marking (`path`), and for unbounded
/// nets and non-termination a loop that can follow it forever.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub kind: &'static str,
    /// Transition indices.
    pub path: Vec<usize>,
    pub cycle: Vec<usize>,
    /// The bad marking, rendered (`p1=2 p3=1` / `p = [1, 2]`).
    pub marking: String,
    /// Whether the trace is certainly executable (false when it relies on abstracted module
    /// outputs).
    pub exact: bool,
    /// Extra explanation (stuck places, growing places).
    pub note: String,
}

/// Everything `pnetv` reports about a net.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub net: String,
    /// "P/T net" or "coloured net".
    pub kind: &'static str,
    pub places: Vec<String>,
    pub transitions: Vec<TransitionInfo>,
    pub states: u64,
    pub edges: u64,
    /// Whether the whole state space was explored.
    pub complete: bool,
    /// Why not, if not.
    pub incomplete_reason: Option<String>,
    pub reduction: &'static str,
    /// Bits per place in the packed markings and bytes per stored state (P/T nets).
    pub packing_bits: Option<u32>,
    pub bytes_per_state: Option<f64>,
    pub max_tokens_in_place: u64,
    pub max_tokens_per_marking: u64,
    pub place_bounds: Vec<u64>,
    pub bounded: Verdict,
    pub unbounded_places: Vec<usize>,
    pub one_safe: Verdict,
    pub dead_markings: u64,
    pub proper_ends: u64,
    pub deadlock: Verdict,
    pub dead_transitions: Option<Vec<usize>>,
    pub terminates: Verdict,
    pub live: Option<Vec<bool>>,
    pub p_invariants: Option<Vec<Vec<u64>>>,
    pub t_invariants: Option<Vec<Vec<u64>>>,
    pub structurally_bounded: bool,
    /// Whether the state space is exact (false: module outputs were abstracted).
    pub exact_state_space: bool,
    pub notes: Vec<String>,
    pub traces: Vec<Trace>,
}

impl Report {
    pub fn new(net: impl Into<String>, kind: &'static str) -> Report {
        Report {
            net: net.into(),
            kind,
            places: Vec::new(),
            transitions: Vec::new(),
            states: 0,
            edges: 0,
            complete: true,
            incomplete_reason: None,
            reduction: "none",
            packing_bits: None,
            bytes_per_state: None,
            max_tokens_in_place: 0,
            max_tokens_per_marking: 0,
            place_bounds: Vec::new(),
            bounded: Verdict::Unknown("not computed".into()),
            unbounded_places: Vec::new(),
            one_safe: Verdict::Unknown("not computed".into()),
            dead_markings: 0,
            proper_ends: 0,
            deadlock: Verdict::Unknown("not computed".into()),
            dead_transitions: None,
            terminates: Verdict::Unknown("not computed".into()),
            live: None,
            p_invariants: None,
            t_invariants: None,
            structurally_bounded: false,
            exact_state_space: true,
            notes: Vec::new(),
            traces: Vec::new(),
        }
    }

    /// Whether a violation was found: a deadlock or an unbounded place.
    pub fn violated(&self) -> bool {
        self.deadlock == Verdict::Yes || self.bounded == Verdict::No
    }

    fn tname(&self, t: usize) -> &str {
        self.transitions.get(t).map_or("?", |x| x.name.as_str())
    }

    /// The trace file contents (see the crate docs) of a trace.
    pub fn trace_json(&self, trace: &Trace) -> Json {
        let names: Vec<&str> = trace.path.iter().map(|&t| self.tname(t)).collect();
        let steps: Vec<Json> = trace.path.iter().map(|&t| self.step_json(t)).collect();
        let mut doc = json!({
            "format": "pnet-trace",
            "version": 1,
            "net": self.net,
            "kind": trace.kind,
            "transitions": names,
            "steps": steps,
            "marking": trace.marking,
            "exact": trace.exact,
        });
        if !trace.cycle.is_empty() {
            let names: Vec<&str> = trace.cycle.iter().map(|&t| self.tname(t)).collect();
            doc["loop"] = json!(names);
            doc["loop_steps"] = json!(
                trace
                    .cycle
                    .iter()
                    .map(|&t| self.step_json(t))
                    .collect::<Vec<_>>()
            );
        }
        doc
    }

    fn step_json(&self, t: usize) -> Json {
        match self.transitions.get(t) {
            Some(x) => json!({ "index": t, "id": x.id, "name": x.name, "location": x.location }),
            None => json!({ "index": t }),
        }
    }

    pub fn to_json(&self) -> Json {
        let names = |v: &[usize]| {
            v.iter()
                .map(|&t| self.tname(t).to_string())
                .collect::<Vec<_>>()
        };
        let place_bounds: serde_json::Map<String, Json> = self
            .places
            .iter()
            .zip(&self.place_bounds)
            .map(|(p, b)| (p.clone(), json!(b)))
            .collect();
        let live = self.live.as_ref().map(|l| {
            json!({
                "live": l.iter().all(|&x| x),
                "not_live": l.iter().enumerate().filter(|(_, x)| !**x).map(|(t, _)| self.tname(t)).collect::<Vec<_>>(),
            })
        });
        let inv = |v: &Option<Vec<Vec<u64>>>, names: &dyn Fn(usize) -> String| {
            v.as_ref().map(|v| {
                v.iter()
                    .map(|y| {
                        let m: serde_json::Map<String, Json> = y
                            .iter()
                            .enumerate()
                            .filter(|(_, w)| **w > 0)
                            .map(|(i, w)| (names(i), json!(w)))
                            .collect();
                        Json::Object(m)
                    })
                    .collect::<Vec<_>>()
            })
        };
        json!({
            "net": self.net,
            "kind": self.kind,
            "places": self.places.len(),
            "transitions": self.transitions.len(),
            "states": self.states,
            "edges": self.edges,
            "complete": self.complete,
            "incomplete_reason": self.incomplete_reason,
            "reduction": self.reduction,
            "exact_state_space": self.exact_state_space,
            "packing_bits": self.packing_bits,
            "bytes_per_state": self.bytes_per_state,
            "max_tokens_in_place": self.max_tokens_in_place,
            "max_tokens_per_marking": self.max_tokens_per_marking,
            "place_bounds": place_bounds,
            "bounded": self.bounded.json(),
            "unbounded_places": self.unbounded_places.iter().map(|&p| self.places[p].clone()).collect::<Vec<_>>(),
            "one_safe": self.one_safe.json(),
            "deadlock": self.deadlock.json(),
            "dead_markings": self.dead_markings,
            "proper_ends": self.proper_ends,
            "dead_transitions": self.dead_transitions.as_ref().map(|d| names(d)),
            "terminates": self.terminates.json(),
            "liveness": live,
            "p_invariants": inv(&self.p_invariants, &|i| self.places[i].clone()),
            "t_invariants": inv(&self.t_invariants, &|i| self.tname(i).to_string()),
            "structurally_bounded": self.structurally_bounded,
            "notes": self.notes,
            "traces": self.traces.iter().map(|t| self.trace_json(t)).collect::<Vec<_>>(),
        })
    }

    /// The terminal report.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let w = &mut s;
        let _ = writeln!(
            w,
            "{}: {} with {} places, {} transitions",
            self.net,
            self.kind,
            self.places.len(),
            self.transitions.len()
        );
        let _ = write!(
            w,
            "state space: {} states, {} edges",
            self.states, self.edges
        );
        if self.reduction != "none" {
            let _ = write!(w, " (reduced: {})", self.reduction);
        }
        if let (Some(b), Some(bps)) = (self.packing_bits, self.bytes_per_state) {
            let _ = write!(w, "; {b} bit(s) per place, {bps:.1} bytes per state");
        }
        let _ = writeln!(w);
        if let Some(r) = &self.incomplete_reason {
            let _ = writeln!(
                w,
                "  INCOMPLETE: {r}; verdicts below that need the whole state space are unknown"
            );
        }
        if !self.exact_state_space {
            let _ = writeln!(
                w,
                "  over-approximation: module outputs are abstracted (see notes)"
            );
        }
        let _ = writeln!(
            w,
            "max tokens: {} in a place, {} in a marking",
            self.max_tokens_in_place, self.max_tokens_per_marking
        );
        let bounded = match &self.bounded {
            Verdict::Yes => format!("bounded ({}-bounded)", self.max_tokens_in_place),
            Verdict::No => {
                let ps: Vec<&str> = self
                    .unbounded_places
                    .iter()
                    .map(|&p| self.places[p].as_str())
                    .collect();
                format!("UNBOUNDED: {}", ps.join(", "))
            }
            Verdict::Unknown(why) => format!("unknown ({why})"),
        };
        let _ = writeln!(w, "boundedness: {bounded}");
        if self.places.len() <= 40 && self.bounded != Verdict::No {
            let bounds: Vec<String> = self
                .places
                .iter()
                .zip(&self.place_bounds)
                .map(|(p, b)| format!("{p}<={b}"))
                .collect();
            let _ = writeln!(w, "  per place: {}", bounds.join(" "));
        }
        let _ = writeln!(w, "1-safe: {}", self.one_safe.text("yes", "NO"));
        let dl = match &self.deadlock {
            Verdict::Yes => format!(
                "FOUND ({} dead marking(s), {} proper end(s))",
                self.dead_markings, self.proper_ends
            ),
            Verdict::No if self.dead_markings == 0 => "none (no dead marking)".to_string(),
            Verdict::No => format!(
                "none ({} dead marking(s), all proper ends)",
                self.dead_markings
            ),
            Verdict::Unknown(why) => format!(
                "unknown ({why}; {} dead marking(s) seen)",
                self.dead_markings
            ),
        };
        let _ = writeln!(w, "deadlock: {dl}");
        match &self.dead_transitions {
            Some(d) if d.is_empty() => {
                let _ = writeln!(w, "dead transitions: none");
            }
            Some(d) => {
                let n: Vec<&str> = d.iter().map(|&t| self.tname(t)).collect();
                let _ = writeln!(w, "dead transitions: {} ({})", d.len(), n.join(", "));
            }
            None => {
                let _ = writeln!(w, "dead transitions: unknown");
            }
        }
        let _ = writeln!(
            w,
            "terminates: {}",
            self.terminates
                .text("yes", "NO (an infinite firing sequence exists)")
        );
        if let Some(l) = &self.live {
            let not: Vec<&str> = l
                .iter()
                .enumerate()
                .filter(|(_, x)| !**x)
                .map(|(t, _)| self.tname(t))
                .collect();
            if not.is_empty() {
                let _ = writeln!(w, "live: yes (every transition can always fire again)");
            } else {
                let shown: Vec<&str> = not.iter().take(10).copied().collect();
                let more = if not.len() > 10 {
                    format!(", ... ({} in all)", not.len())
                } else {
                    String::new()
                };
                let _ = writeln!(w, "live: no; not live: {}{more}", shown.join(", "));
            }
        }
        let count = |v: &Option<Vec<Vec<u64>>>, what: &str| match v {
            Some(v) => format!("{} {what}-invariant(s)", v.len()),
            None => format!("{what}-invariants not computed"),
        };
        match (&self.p_invariants, &self.t_invariants) {
            (None, None) => {
                let _ = writeln!(w, "invariants: not computed");
            }
            (None, t) => {
                let _ = writeln!(w, "invariants: {}, {}", count(&None, "P"), count(t, "T"));
            }
            (Some(p), t) => {
                let _ = writeln!(
                    w,
                    "invariants: {} P-invariant(s), {}; {}",
                    p.len(),
                    count(t, "T"),
                    if self.structurally_bounded {
                        "P-invariants cover every place: structurally bounded"
                    } else {
                        "P-invariants do not cover every place"
                    }
                );
                for y in p.iter().take(8) {
                    let terms: Vec<String> = y
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c > 0)
                        .map(|(i, c)| {
                            if *c == 1 {
                                self.places[i].clone()
                            } else {
                                format!("{c}*{}", self.places[i])
                            }
                        })
                        .collect();
                    let _ = writeln!(w, "  P: {}", terms.join(" + "));
                }
                if p.len() > 8 {
                    let _ = writeln!(w, "  ... ({} more, see --json)", p.len() - 8);
                }
            }
        }
        for n in &self.notes {
            let _ = writeln!(w, "note: {n}");
        }
        for t in &self.traces {
            let _ = writeln!(
                w,
                "\ncounterexample ({}{}), {} step(s){}:",
                t.kind,
                if t.exact { "" } else { ", possibly spurious" },
                t.path.len(),
                if t.note.is_empty() {
                    String::new()
                } else {
                    format!(" - {}", t.note)
                }
            );
            for (i, &tr) in t.path.iter().enumerate() {
                let x = &self.transitions[tr];
                let _ = writeln!(w, "  {:>4}. {}  [{}]", i + 1, x.name, x.location);
            }
            if !t.cycle.is_empty() {
                let _ = writeln!(w, "  then repeat forever:");
                for &tr in &t.cycle {
                    let x = &self.transitions[tr];
                    let _ = writeln!(w, "        {}  [{}]", x.name, x.location);
                }
            }
            let _ = writeln!(w, "  reaching: {}", t.marking);
        }
        s
    }
}
