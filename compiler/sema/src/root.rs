//! The root of a bundle is always a net: a root `defun` whose body is a module, several
//! modules or an expression (GPI-Space runs such nets: the activity is the one call) is
//! wrapped into a synthetic net that calls it once per set of input tokens.
//!
//! The synthetic net has
//! - one place per port of the defun, named like the port; an `inout` port gets two: `x`
//!   for its inputs and `x#out` for its outputs (one place for both would feed every result
//!   back into the next call), and the wrapper has an in port `x` and an out port `x`, so that
//!   inputs are put on `x` and results read from `x#out`;
//! - one transition, named like the defun (`#root` when it has no name), calling the defun
//!   with `connect-in`/`connect-out` to those places, under the defun's conditions;
//! - when the defun has no input port at all, a place `#once` with one control token and an
//!   extra in port `#once` of the defun consumed by the call, so that it runs once (a
//!   transition without inputs would fire forever);
//! - the defun's span on everything synthetic (places take their port's span).
//!
//! `#` cannot occur in a user's name (names match `[A-Za-z_][A-Za-z0-9_]*`), so the synthetic
//! names never clash. Tunnel ports have nothing to connect to at the root and stay unbound.

use pnet_bundle::{
    Body, Code, CodeId, ConnectKind, Connection, Function, FunctionId, Instr, Net, Place, PlaceId,
    Port, PortDir, PortId, Slot, SlotKind, SourceSpan, Transition,
};
use pnet_stdlib::{Type, Value};

/// The name of the transition when the root defun has no name.
pub const ANONYMOUS: &str = "#root";
/// The suffix of the place that receives an inout port's results.
pub const OUT_SUFFIX: &str = "#out";
/// The gate of a root without inputs: its place and the extra port of the defun.
pub const ONCE: &str = "#once";

/// Whether the root function needs the wrapper.
pub fn needs_wrapper(f: &Function) -> bool {
    !matches!(f.body, Body::Net(_))
}

/// Wraps the root function `f` (whose body is not a net) into a synthetic net: pushes `f`
/// (possibly with the `#once` port added) onto `functions` and returns the wrapper, which
/// becomes the root. `condition` is the defun's joined conditions over its ports; `codes` are
/// the bundle's codes, some of which are renumbered when the `#once` port is added.
pub fn wrap(
    functions: &mut Vec<Function>,
    codes: &mut [Code],
    mut f: Function,
    condition: Option<CodeId>,
) -> Function {
    let span = f.span;
    let mut places: Vec<Place> = Vec::new();
    let mut ports: Vec<Port> = Vec::new();
    let mut connections: Vec<Connection> = Vec::new();
    let mut add_place = |name: String, ty: &Type, tokens: Vec<Value>, span: SourceSpan| {
        places.push(Place::new(&name, ty.clone(), tokens, span));
        PlaceId::from(places.len() - 1)
    };
    for (i, p) in f.ports.iter().enumerate() {
        let port = PortId::from(i);
        let mut bind = |dir: PortDir, kind: ConnectKind, place: PlaceId| {
            ports.push(Port {
                name: p.name.clone(),
                dir,
                ty: p.ty.clone(),
                place: Some(place),
                span: p.span,
            });
            connections.push(Connection {
                kind,
                port,
                place,
                span: p.span,
            });
        };
        match p.dir {
            PortDir::In => {
                let pl = add_place(p.name.clone(), &p.ty, Vec::new(), p.span);
                bind(PortDir::In, ConnectKind::In, pl);
            }
            PortDir::Out => {
                let pl = add_place(p.name.clone(), &p.ty, Vec::new(), p.span);
                bind(PortDir::Out, ConnectKind::Out, pl);
            }
            PortDir::InOut => {
                let pin = add_place(p.name.clone(), &p.ty, Vec::new(), p.span);
                let pout = add_place(format!("{}{OUT_SUFFIX}", p.name), &p.ty, Vec::new(), p.span);
                bind(PortDir::In, ConnectKind::In, pin);
                bind(PortDir::Out, ConnectKind::Out, pout);
            }
            PortDir::Tunnel => {}
        }
    }
    if !f.ports.iter().any(|p| p.dir.is_input()) {
        let slot = f.ports.len();
        for c in function_codes(&f, condition) {
            // (After errors, a code id may be a placeholder: renumber only `f`'s own codes.)
            if let Some(code) = codes.get_mut(c.index())
                && runs_over(code, &f.ports)
            {
                insert_port_slot(code, slot, ONCE);
            }
        }
        f.ports.push(Port {
            name: ONCE.to_string(),
            dir: PortDir::In,
            ty: Type::Control,
            place: None,
            span,
        });
        let pl = add_place(ONCE.to_string(), &Type::Control, vec![Value::Control], span);
        connections.push(Connection {
            kind: ConnectKind::In,
            port: PortId::from(slot),
            place: pl,
            span,
        });
    }
    let name = f.name.clone();
    functions.push(f);
    let function = FunctionId::from(functions.len() - 1);
    let mut call = Transition::new(
        name.as_deref().unwrap_or(ANONYMOUS),
        function,
        connections,
        span,
    );
    call.condition = condition;
    Function {
        name,
        ports,
        body: Body::Net(Net {
            places,
            transitions: vec![call],
        }),
        requires: Vec::new(),
        properties: Vec::new(),
        memory_buffers: Vec::new(),
        memory_transfers: Vec::new(),
        span,
    }
}

/// Every code that runs over `f`'s ports (slot `i` = port `i`), each once.
fn function_codes(f: &Function, condition: Option<CodeId>) -> Vec<CodeId> {
    let mut out: Vec<CodeId> = condition.into_iter().collect();
    let modules = match &f.body {
        Body::Expression(c) => {
            out.push(*c);
            Vec::new()
        }
        Body::Module(m) => vec![m],
        Body::Modules { modules, .. } => modules.iter().collect(),
        Body::Net(_) => Vec::new(),
    };
    out.extend(modules.iter().filter_map(|m| m.eureka_group));
    for b in &f.memory_buffers {
        out.push(b.size);
        out.extend(b.alignment);
    }
    for t in &f.memory_transfers {
        out.push(t.global);
        out.push(t.local);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `code`'s first slots are the ports `ports`.
fn runs_over(code: &Code, ports: &[Port]) -> bool {
    code.slots.len() >= ports.len()
        && code
            .slots
            .iter()
            .zip(ports)
            .all(|(s, p)| s.kind == SlotKind::Port && s.name == p.name)
}

/// Inserts a port slot at index `at` (after the existing port slots, before the locals) and
/// renumbers the slots from `at` on.
fn insert_port_slot(code: &mut Code, at: usize, name: &str) {
    let shift = |s: &mut u16| {
        if usize::from(*s) >= at {
            *s = s.saturating_add(1);
        }
    };
    for i in &mut code.instrs {
        match i {
            Instr::Load(s) | Instr::Store(s) | Instr::LoadPath(s, _) | Instr::StorePath(s, _) => {
                shift(s)
            }
            _ => {}
        }
    }
    for s in &mut code.reads {
        shift(s);
    }
    let slot = Slot {
        name: name.to_string(),
        kind: SlotKind::Port,
        ty: Type::Control,
    };
    code.slots.insert(at.min(code.slots.len()), slot);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_bundle::Module;

    fn port(name: &str, dir: PortDir, ty: Type) -> Port {
        Port::new(name, dir, ty, None, SourceSpan::default())
    }

    fn module_fn(ports: Vec<Port>) -> Function {
        let m = Module::new("m", "f", Vec::new(), SourceSpan::default());
        Function::new("top", ports, Body::Module(m), SourceSpan::default())
    }

    fn net(f: &Function) -> &Net {
        match &f.body {
            Body::Net(n) => n,
            _ => panic!("not a net"),
        }
    }

    #[test]
    fn in_and_out_ports_get_one_place_each_and_one_call() {
        let mut functions = Vec::new();
        let f = module_fn(vec![
            port("a", PortDir::In, Type::Long),
            port("b", PortDir::Out, Type::String),
        ]);
        let w = wrap(&mut functions, &mut [], f, None);
        assert_eq!(functions.len(), 1);
        let n = net(&w);
        let names: Vec<&str> = n.places.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(n.places[1].ty, Type::String);
        let ports: Vec<(&str, PortDir, Option<PlaceId>)> = w
            .ports
            .iter()
            .map(|p| (p.name.as_str(), p.dir, p.place))
            .collect();
        assert_eq!(
            ports,
            [
                ("a", PortDir::In, Some(PlaceId(0))),
                ("b", PortDir::Out, Some(PlaceId(1)))
            ]
        );
        assert_eq!(n.transitions.len(), 1);
        let t = &n.transitions[0];
        assert_eq!(t.name, "top");
        assert_eq!(t.function, FunctionId(0));
        let conns: Vec<(ConnectKind, PortId, PlaceId)> = t
            .connections
            .iter()
            .map(|c| (c.kind, c.port, c.place))
            .collect();
        assert_eq!(
            conns,
            [
                (ConnectKind::In, PortId(0), PlaceId(0)),
                (ConnectKind::Out, PortId(1), PlaceId(1))
            ]
        );
        assert_eq!(functions[0].ports.len(), 2);
    }

    #[test]
    fn an_inout_port_reads_and_writes_different_places() {
        let mut functions = Vec::new();
        let f = module_fn(vec![port("x", PortDir::InOut, Type::Long)]);
        let w = wrap(&mut functions, &mut [], f, None);
        let n = net(&w);
        let names: Vec<&str> = n.places.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["x", "x#out"]);
        assert_eq!(w.ports.len(), 2);
        assert_eq!(
            (w.ports[0].dir, w.ports[0].place),
            (PortDir::In, Some(PlaceId(0)))
        );
        assert_eq!(
            (w.ports[1].dir, w.ports[1].place),
            (PortDir::Out, Some(PlaceId(1)))
        );
        // The engine finds the in port first by name.
        assert_eq!(w.port_by_name("x"), Some(PortId(0)));
        let kinds: Vec<(ConnectKind, PortId)> = n.transitions[0]
            .connections
            .iter()
            .map(|c| (c.kind, c.port))
            .collect();
        assert_eq!(
            kinds,
            [(ConnectKind::In, PortId(0)), (ConnectKind::Out, PortId(0))]
        );
        // No gate: the call consumes its input.
        assert!(!n.places.iter().any(|p| p.name == ONCE));
    }

    #[test]
    fn a_root_without_inputs_runs_once_and_its_codes_are_renumbered() {
        let mut functions = Vec::new();
        // expression `${b} := 1L` with a local after the port: slots [b, tmp]
        let mut code = Code::with_slots(
            "expression of top",
            &[("b", Type::Long), ("tmp", Type::Long)],
            vec![
                Instr::Const(0),
                Instr::Store(1),
                Instr::Load(1),
                Instr::Store(0),
            ],
            vec![Value::Long(1)],
            SourceSpan::default(),
        );
        code.slots[1].kind = SlotKind::Local;
        code.reads = vec![1];
        let f = Function::new(
            "top",
            vec![port("b", PortDir::Out, Type::Long)],
            Body::Expression(CodeId(0)),
            SourceSpan::default(),
        );
        let mut codes = vec![code];
        let w = wrap(&mut functions, &mut codes, f, None);
        let inner = &functions[0];
        assert_eq!(inner.ports.len(), 2);
        assert_eq!(inner.ports[1].name, ONCE);
        assert_eq!(inner.ports[1].dir, PortDir::In);
        let c = &codes[0];
        let slots: Vec<(&str, SlotKind)> =
            c.slots.iter().map(|s| (s.name.as_str(), s.kind)).collect();
        assert_eq!(
            slots,
            [
                ("b", SlotKind::Port),
                (ONCE, SlotKind::Port),
                ("tmp", SlotKind::Local)
            ]
        );
        assert_eq!(
            c.instrs,
            [
                Instr::Const(0),
                Instr::Store(2),
                Instr::Load(2),
                Instr::Store(0)
            ]
        );
        assert_eq!(c.reads, [2]);
        let n = net(&w);
        let once = n.place_by_name(ONCE).expect("gate place");
        assert_eq!(n.place(once).tokens, [Value::Control]);
        assert!(
            n.transitions[0]
                .connections
                .iter()
                .any(|c| c.kind == ConnectKind::In && c.place == once && c.port == PortId(1))
        );
        // The wrapper itself has only the user's port.
        assert_eq!(w.ports.len(), 1);
    }

    #[test]
    fn an_anonymous_root_calls_its_transition_by_a_name_no_user_can_write() {
        let mut functions = Vec::new();
        let mut f = module_fn(vec![port("a", PortDir::In, Type::Long)]);
        f.name = None;
        let w = wrap(&mut functions, &mut [], f, Some(CodeId(7)));
        assert_eq!(w.name, None);
        let t = &net(&w).transitions[0];
        assert_eq!(t.name, ANONYMOUS);
        assert_eq!(t.condition, Some(CodeId(7)));
    }

    #[test]
    fn tunnel_ports_stay_unbound() {
        let mut functions = Vec::new();
        let f = module_fn(vec![
            port("a", PortDir::In, Type::Long),
            port("t", PortDir::Tunnel, Type::Long),
        ]);
        let w = wrap(&mut functions, &mut [], f, None);
        assert_eq!(w.ports.len(), 1);
        assert_eq!(net(&w).places.len(), 1);
    }
}
