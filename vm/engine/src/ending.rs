//! How a job ended, beyond its outputs: the tokens a net that stopped early left behind, the
//! out ports it left empty and the transitions that lacked a token (see [`Ending`]); and the
//! root's in ports that nothing feeds (see [`unfed_in_ports`]).

use std::fmt;

use pnet_bundle::{Body, Bundle, ConnectKind};
use serde::{Deserialize, Serialize};

/// At most this many transitions are named in [`Ending::starved`].
pub const MAX_STARVED: usize = 3;

/// At most this many places are named in the text of [`Ending`] (all are in
/// [`Ending::tokens_left`]).
const MAX_PLACES_SHOWN: usize = 8;

/// The final marking of a job, as far as it tells that the net stopped before its work was
/// done. Empty ([`Ending::is_complete`]) for a net that consumed what it was given and filled
/// its out ports.
///
/// Only the root net is looked at: places of child nets are gone when the job ends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ending {
    /// Places of the root net still holding tokens, with their number, in the net's order.
    /// Not counted: places bound to out ports (those tokens are the outputs), places that
    /// transitions only read (constants of `connect-read`), generator places.
    pub tokens_left: Vec<(String, u64)>,
    /// Out ports of the root without a token, in port order.
    pub empty_outputs: Vec<String>,
    /// Transitions of the root net that have tokens on some of their input places (one of
    /// [`Ending::tokens_left`]) but not on all: (transition, an input place that lacked a
    /// token). At most [`MAX_STARVED`]; [`Ending::more_starved`] counts the rest.
    pub starved: Vec<(String, String)>,
    /// Starved transitions beyond those named.
    pub more_starved: u64,
}

impl Ending {
    /// Whether the job ended with nothing to say: no tokens left, no out port empty.
    pub fn is_complete(&self) -> bool {
        self.tokens_left.is_empty() && self.empty_outputs.is_empty() && self.starved.is_empty()
    }

    /// The ending as JSON: `{"complete": B, "tokens_left": [{"place": P, "tokens": N}],
    /// "empty_outputs": [PORT], "starved": [{"transition": T, "place": P}],
    /// "more_starved": N}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "complete": self.is_complete(),
            "tokens_left": self.tokens_left.iter().map(|(p, n)| serde_json::json!({
                "place": p, "tokens": n
            })).collect::<Vec<_>>(),
            "empty_outputs": self.empty_outputs,
            "starved": self.starved.iter().map(|(t, p)| serde_json::json!({
                "transition": t, "place": p
            })).collect::<Vec<_>>(),
            "more_starved": self.more_starved,
        })
    }
}

/// One line: `the net stopped with tokens left on: p (2), q (1); out port `result` is empty;
/// transition `t` lacked a token on `x``; empty when the ending is complete.
impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_complete() {
            return Ok(());
        }
        let mut parts = Vec::new();
        if !self.tokens_left.is_empty() {
            let mut s: Vec<String> = self
                .tokens_left
                .iter()
                .take(MAX_PLACES_SHOWN)
                .map(|(p, n)| format!("{p} ({n})"))
                .collect();
            if self.tokens_left.len() > MAX_PLACES_SHOWN {
                s.push(format!(
                    "and {} more places",
                    self.tokens_left.len() - MAX_PLACES_SHOWN
                ));
            }
            parts.push(format!("tokens left on: {}", s.join(", ")));
        }
        match self.empty_outputs.as_slice() {
            [] => {}
            [p] => parts.push(format!("out port `{p}` is empty")),
            ps => parts.push(format!(
                "out ports {} are empty",
                ps.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
        if !self.starved.is_empty() {
            let mut s: Vec<String> = self
                .starved
                .iter()
                .map(|(t, p)| format!("transition `{t}` lacked a token on `{p}`"))
                .collect();
            if self.more_starved > 0 {
                s.push(format!("and {} more transitions", self.more_starved));
            }
            parts.push(s.join(", "));
        }
        if self.tokens_left.is_empty() {
            write!(f, "the net stopped: {}", parts.join("; "))
        } else {
            write!(f, "the net stopped with {}", parts.join("; "))
        }
    }
}

/// The root's in ports, not among `given`, that no run can put a token on: their place has
/// no initial token (nor is it a generator or a `put_token` place), and no transition of the
/// root net that could ever fire puts tokens on it. A transition could fire when each place it
/// takes from or reads could hold a token: initially marked places, the places of the
/// `given` in ports, and what such transitions put (an over-approximation: conditions and
/// child nets' insides are not looked at, so no port is named that a run might feed). In port
/// order.
pub fn unfed_in_ports(bundle: &Bundle, given: &[String]) -> Vec<String> {
    let f = bundle.function(bundle.root);
    let Body::Net(net) = &f.body else {
        return Vec::new();
    };
    let mut marked: Vec<bool> = net
        .places
        .iter()
        .map(|p| !p.tokens.is_empty() || p.generator || p.put_token)
        .collect();
    for port in f.ports.iter().filter(|p| p.dir.is_input()) {
        if let Some(pl) = port.place
            && given.contains(&port.name)
        {
            marked[pl.index()] = true;
        }
    }
    let mut fired = vec![false; net.transitions.len()];
    loop {
        let mut changed = false;
        for (t, tr) in net.transitions.iter().enumerate() {
            let can = !fired[t]
                && tr.connections.iter().all(|c| {
                    !matches!(c.kind, ConnectKind::In | ConnectKind::Read)
                        || marked[c.place.index()]
                });
            if !can {
                continue;
            }
            fired[t] = true;
            changed = true;
            for c in &tr.connections {
                if matches!(c.kind, ConnectKind::Out | ConnectKind::OutMany) {
                    marked[c.place.index()] = true;
                }
            }
            for &(_, real) in &tr.place_map {
                marked[real.index()] = true;
            }
        }
        if !changed {
            break;
        }
    }
    f.ports
        .iter()
        .filter(|p| p.dir.is_input() && !given.contains(&p.name))
        // pnetc warns about in ports bound to no place.
        .filter(|p| p.place.is_some_and(|pl| !marked[pl.index()]))
        .map(|p| p.name.clone())
        .collect()
}
