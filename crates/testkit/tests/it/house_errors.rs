//! The house rule on errors (docs/architecture.md, "Errors"): a caller that branches on
//! a failure branches on a type, never on the text of an error. In product code, a value
//! bound as an error — by an `Err(x)` pattern (a `match` arm, `if let`, `while let`),
//! or as the parameter of the closure given to `map_err`, `or_else`, `unwrap_or_else`
//! or `map_or_else` — is not examined for its text inside that arm or closure: no
//! `x.contains(…)`, `x.starts_with(…)`, `x.ends_with(…)`, `x.find(…)`,
//! `x.strip_prefix(…)`, `x.strip_suffix(…)` or `x.matches(…)`, on `x` or on
//! `x.to_string()`, and no `x == "…"`. A message built from such a value and matched
//! later is out of the check's sight; the rule in the doc still holds it.

use std::collections::BTreeSet;

use syn::visit::Visit;

use crate::house::{crates, is_cfg_test, rust_files, workspace};

/// Methods that look into a text.
const TEXT_METHODS: &[&str] = &[
    "contains",
    "starts_with",
    "ends_with",
    "find",
    "strip_prefix",
    "strip_suffix",
    "matches",
];

/// Methods whose closure's parameter is the error of a `Result`.
const ERROR_CLOSURES: &[&str] = &["map_err", "or_else", "unwrap_or_else", "map_or_else"];

/// Finds, inside one arm or closure, an error's text examined.
struct TextLooks<'n> {
    names: &'n BTreeSet<String>,
    found: Vec<String>,
}

impl TextLooks<'_> {
    /// The error name `e` is `e` itself or `e.to_string()`.
    fn error_name(&self, e: &syn::Expr) -> Option<String> {
        match e {
            syn::Expr::Path(p) => p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .filter(|n| self.names.contains(n)),
            syn::Expr::MethodCall(m) if m.method == "to_string" && m.args.is_empty() => {
                self.error_name(&m.receiver)
            }
            syn::Expr::Paren(p) => self.error_name(&p.expr),
            syn::Expr::Reference(r) => self.error_name(&r.expr),
            _ => None,
        }
    }
}

fn is_str_literal(e: &syn::Expr) -> bool {
    matches!(
        e,
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        })
    )
}

impl<'ast> Visit<'ast> for TextLooks<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let method = m.method.to_string();
        if TEXT_METHODS.contains(&method.as_str()) {
            if let Some(name) = self.error_name(&m.receiver) {
                self.found.push(format!("{name}.{method}(…)"));
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if matches!(b.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_)) {
            for (side, other) in [(&*b.left, &*b.right), (&*b.right, &*b.left)] {
                if let (Some(name), true) = (self.error_name(side), is_str_literal(other)) {
                    self.found.push(format!("{name} compared with a text"));
                }
            }
        }
        syn::visit::visit_expr_binary(self, b);
    }
}

/// The names an `Err(…)` pattern binds (`Err(e)`, `Err(ref e)`, nested in `Some`, a
/// tuple or an or-pattern).
fn err_bindings(p: &syn::Pat, out: &mut BTreeSet<String>) {
    match p {
        syn::Pat::TupleStruct(ts) => {
            let is_err = ts.path.segments.last().is_some_and(|s| s.ident == "Err");
            for elem in &ts.elems {
                match (is_err, elem) {
                    (true, syn::Pat::Ident(i)) => {
                        out.insert(i.ident.to_string());
                    }
                    _ => err_bindings(elem, out),
                }
            }
        }
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| err_bindings(e, out)),
        syn::Pat::Or(o) => o.cases.iter().for_each(|c| err_bindings(c, out)),
        syn::Pat::Reference(r) => err_bindings(&r.pat, out),
        syn::Pat::Paren(p) => err_bindings(&p.pat, out),
        _ => {}
    }
}

/// The product code's places where an error's text is examined, one file at a time.
struct ErrorText<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl ErrorText<'_> {
    fn look(&mut self, names: &BTreeSet<String>, parts: &[&syn::Expr], at: proc_macro2::Span) {
        if names.is_empty() {
            return;
        }
        let mut looks = TextLooks {
            names,
            found: Vec::new(),
        };
        for p in parts {
            looks.visit_expr(p);
        }
        let line = at.start().line;
        for f in looks.found {
            self.found.push(format!("{}:{line}: {f}", self.file));
        }
    }
}

impl<'ast> Visit<'ast> for ErrorText<'_> {
    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        let mut names = BTreeSet::new();
        err_bindings(&arm.pat, &mut names);
        let mut parts: Vec<&syn::Expr> = vec![&arm.body];
        if let Some((_, guard)) = &arm.guard {
            parts.push(guard);
        }
        self.look(&names, &parts, arm.fat_arrow_token.spans[0]);
        syn::visit::visit_arm(self, arm);
    }
    fn visit_expr_if(&mut self, e: &'ast syn::ExprIf) {
        if let syn::Expr::Let(l) = &*e.cond {
            let mut names = BTreeSet::new();
            err_bindings(&l.pat, &mut names);
            let body = syn::Expr::Block(syn::ExprBlock {
                attrs: Vec::new(),
                label: None,
                block: e.then_branch.clone(),
            });
            self.look(&names, &[&body], e.if_token.span);
        }
        syn::visit::visit_expr_if(self, e);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if ERROR_CLOSURES.contains(&m.method.to_string().as_str()) {
            if let Some(syn::Expr::Closure(c)) = m.args.first() {
                let mut names = BTreeSet::new();
                if let [syn::Pat::Ident(i)] = c.inputs.iter().collect::<Vec<_>>()[..] {
                    names.insert(i.ident.to_string());
                }
                self.look(&names, &[&c.body], m.method.span());
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
}

fn error_text_looks(text: &str, shown: &str) -> Vec<String> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{shown}: {e}"));
    let mut v = ErrorText {
        file: shown,
        found: Vec::new(),
    };
    v.visit_file(&file);
    v.found
}

#[test]
fn no_caller_branches_on_the_text_of_an_error() {
    let mut found = Vec::new();
    for krate in crates() {
        let mut files = Vec::new();
        rust_files(
            &workspace().join("crates").join(&krate).join("src"),
            &mut files,
        );
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy();
            if name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let shown = path
                .strip_prefix(workspace())
                .unwrap_or(&path)
                .display()
                .to_string();
            found.extend(error_text_looks(
                &std::fs::read_to_string(&path).unwrap(),
                &shown,
            ));
        }
    }
    assert!(
        found.is_empty(),
        "a caller that branches on a failure needs its kind as a type (an error enum, or \
         pgsurge_wire::ErrorClass), not its text:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_error_text_rule_sees_a_look_into_an_error() {
    let text = r#"
fn a(r: Result<(), String>) -> bool {
    match r {
        Err(e) if e.contains("busy") => true,
        Ok(()) | Err(_) => false,
    }
}
fn b(r: Result<(), std::io::Error>) -> Result<(), String> {
    r.map_err(|e| if e.to_string().starts_with("x") { "y".into() } else { e.to_string() })
}
fn c(r: Result<(), String>) -> bool {
    if let Err(why) = r { why == "gone" } else { false }
}
fn fine(r: Result<(), String>, names: &[String]) -> String {
    match r {
        Err(e) => format!("{e}: {}", names.contains(&e)),
        Ok(()) => "ok".contains('o').to_string(),
    }
}
#[cfg(test)]
mod tests {
    fn t(r: Result<(), String>) { if let Err(e) = r { assert!(e.contains("x")) } }
}
"#;
    let found = error_text_looks(text, "demo.rs");
    assert_eq!(
        found,
        [
            "demo.rs:4: e.contains(…)",
            "demo.rs:9: e.starts_with(…)",
            "demo.rs:12: why compared with a text",
        ],
        "{found:?}"
    );
}
