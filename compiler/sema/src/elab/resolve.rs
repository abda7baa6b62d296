//! Spans of items parsed alone ([`crate::db::source_tree`]) mapped back to their files, in
//! everything an elaboration returns: its diagnostics, facts and bundle.

use pnet_bundle::{Body, Function, Module, Net};

use super::Elaborated;
use crate::db::Resolver;

pub(super) fn elaborated(r: &Resolver, e: &mut Elaborated) {
    if r.is_empty() {
        return;
    }
    for (d, _) in &mut e.diagnostics {
        r.diagnostic(d);
    }
    facts(r, &mut e.facts);
    for fun in &mut e.bundle.functions {
        function(r, fun);
    }
    for c in &mut e.bundle.codes {
        r.source(&mut c.span);
        c.spans.iter_mut().for_each(|s| r.source(s));
    }
}

pub(super) fn facts(r: &Resolver, f: &mut crate::facts::Facts) {
    if r.is_empty() {
        return;
    }
    for s in &mut f.symbols {
        r.span(&mut s.span);
    }
    for x in &mut f.references {
        r.span(&mut x.span);
        r.span(&mut x.target);
    }
    for sc in &mut f.scopes {
        r.span(&mut sc.span);
        for s in sc
            .ports
            .iter_mut()
            .chain(&mut sc.places)
            .chain(&mut sc.structs)
        {
            r.span(&mut s.span);
        }
    }
}

fn function(r: &Resolver, f: &mut Function) {
    r.source(&mut f.span);
    for p in &mut f.ports {
        r.source(&mut p.span);
    }
    for b in &mut f.memory_buffers {
        r.source(&mut b.span);
    }
    for t in &mut f.memory_transfers {
        r.source(&mut t.span);
    }
    match &mut f.body {
        Body::Expression(_) => {}
        Body::Module(m) => module(r, m),
        Body::Modules { modules, .. } => modules.iter_mut().for_each(|m| module(r, m)),
        Body::Net(n) => net(r, n),
    }
}

fn module(r: &Resolver, m: &mut Module) {
    r.source(&mut m.span);
}

fn net(r: &Resolver, n: &mut Net) {
    for p in &mut n.places {
        r.source(&mut p.span);
    }
    for t in &mut n.transitions {
        r.source(&mut t.span);
        for c in &mut t.connections {
            r.source(&mut c.span);
        }
        for x in &mut t.responses {
            r.source(&mut x.span);
        }
    }
}
