//! Expressions and conditions inside the elaboration: parsed, typed and lowered.

use super::*;

impl<'a> Elab<'a> {
    // ---------------------------------------------------------------- expressions

    pub(super) fn parse_expr(&mut self, text: &MappedText) -> (Expr, bool) {
        let (e, bad, ds) = parse_expr_diags(text);
        self.diags.extend(ds.into_iter().map(|d| (d, None)));
        (e, bad)
    }

    pub(super) fn internal(&mut self, span: Span, msg: &str) {
        self.error(
            Diagnostic::error("internal_error", format!("internal compiler error: {msg}"))
                .with_primary(span, "while compiling this"),
        );
    }

    pub(super) fn lower(
        &mut self,
        expr: &Expr,
        bad: bool,
        ports: &[PortSig],
        mode: Mode,
        name: String,
        expected: Option<Type>,
    ) -> CodeId {
        let (code, ds) = lower_diags(expr, bad, ports, mode, name, expected);
        self.diags.extend(ds.into_iter().map(|d| (d, None)));
        self.codes.push(code);
        CodeId::from(self.codes.len() - 1)
    }

    pub(super) fn lower_text(
        &mut self,
        text: &MappedText,
        ports: &[PortSig],
        mode: Mode,
        name: String,
        expected: Option<Type>,
    ) -> CodeId {
        let (e, bad) = self.parse_expr(text);
        self.lower(&e, bad, ports, mode, name, expected)
    }

    pub(super) fn eval_token(&mut self, text: &MappedText, ty: &Type) -> Option<Value> {
        let (e, bad) = self.parse_expr(text);
        if bad {
            return None;
        }
        match catch_unwind(AssertUnwindSafe(|| crate::expr::eval_const(&e, ty))) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(ds)) => {
                self.diags.extend(ds.into_iter().map(|d| (d, None)));
                None
            }
            Err(p) => {
                self.internal(text.whole(), &panic_message(&*p));
                None
            }
        }
    }

    /// Joins the function's and the transition's conditions with `&&` and lowers them.
    pub(super) fn condition(
        &mut self,
        f: &ElabFn<'a>,
        extra: Vec<Expr>,
        name: &str,
    ) -> Option<CodeId> {
        let conds = f.conditions.clone().into_iter().chain(extra);
        let joined = join_conditions(conds)?;
        let sigs = port_sigs(&f.function.ports);
        let code = self.lower(
            &joined,
            false,
            &sigs,
            Mode::Condition,
            name.to_string(),
            None,
        );
        Some(code)
    }

    /// Parses the non-blank condition texts.
    pub(super) fn parse_conditions(&mut self, texts: &[MappedText]) -> Vec<Expr> {
        texts
            .iter()
            .filter(|t| !is_blank(t))
            .map(|t| self.parse_expr(t).0)
            .collect()
    }
}
