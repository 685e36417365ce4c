//! The house rules of the workspace, checked on its sources: the crate layers of
//! `docs/architecture.md` hold (every dependency points down), every `lib.rs` names each
//! of its modules, and no product function is longer than [`MAX_FN_LINES`] lines unless
//! its doc says that it mirrors pgbench's or libpq's own code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The longest product function allowed, in lines (braces included).
const MAX_FN_LINES: usize = 150;

/// The phrase that lets a function be longer: a match table or state machine that
/// follows pgbench's (or libpq's) own, case by case.
const MIRROR_PHRASE: &str = "mirrors";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every crate directory under `crates/`.
fn crates() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            workspace()
                .join("crates")
                .join(n)
                .join("Cargo.toml")
                .exists()
        })
        .collect();
    v.sort();
    v
}

/// The layer of each crate, from the diagram of docs/architecture.md (0 = top).
fn layers() -> BTreeMap<String, usize> {
    let doc = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let start = doc
        .find("Layers, top to bottom")
        .expect("docs/architecture.md has the layer diagram");
    let block = doc[start..].split("```").nth(1).expect("a fenced diagram");
    let known = crates();
    let mut layers = BTreeMap::new();
    for (i, line) in block.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        for word in line.split_whitespace() {
            if known.iter().any(|c| c == word) {
                assert!(
                    layers.insert(word.to_string(), i).is_none(),
                    "{word} is twice in the diagram"
                );
            }
        }
    }
    layers
}

/// The workspace crates `krate` depends on (normal dependencies, not dev).
fn dependencies(krate: &str) -> Vec<String> {
    let path = workspace().join("crates").join(krate).join("Cargo.toml");
    let manifest: toml::Value = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut deps = Vec::new();
    let mut take = |table: Option<&toml::Value>| {
        for (name, spec) in table.and_then(|t| t.as_table()).into_iter().flatten() {
            let path = spec.get("path").and_then(|p| p.as_str());
            if let Some(dir) = path.and_then(|p| p.strip_prefix("../")) {
                deps.push(format!("{name} ({dir})"));
            }
        }
    };
    take(manifest.get("dependencies"));
    take(manifest.get("build-dependencies"));
    deps
}

#[test]
fn every_dependency_points_to_a_lower_layer() {
    let layers = layers();
    let mut wrong = Vec::new();
    for krate in crates() {
        if krate == "testkit" {
            // A dev-dependency only, never linked into the binary.
            continue;
        }
        let Some(&mine) = layers.get(&krate) else {
            wrong.push(format!(
                "{krate} is not in the diagram of docs/architecture.md"
            ));
            continue;
        };
        for dep in dependencies(&krate) {
            let dir = dep.split(" (").nth(1).unwrap().trim_end_matches(')');
            match layers.get(dir) {
                Some(&theirs) if theirs > mine => {}
                Some(_) => wrong.push(format!("{krate} → {dep}: not a lower layer")),
                None => wrong.push(format!("{krate} → {dep}: not in the diagram")),
            }
        }
    }
    assert!(wrong.is_empty(), "layers broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_rule_reads_the_diagram() {
    let layers = layers();
    assert!(layers.len() >= 10, "{layers:?}");
    assert!(layers["cli"] < layers["campaign"]);
    assert!(layers["campaign"] < layers["engine"]);
    assert!(layers["engine"] < layers["wire"]);
}

#[test]
fn every_lib_rs_names_each_of_its_modules() {
    let mut missing = Vec::new();
    for krate in crates() {
        let lib = workspace().join("crates").join(&krate).join("src/lib.rs");
        let Ok(text) = std::fs::read_to_string(&lib) else {
            continue;
        };
        let doc: String = text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let file = syn::parse_file(&text).unwrap();
        for item in &file.items {
            let syn::Item::Mod(m) = item else { continue };
            let is_test = m.attrs.iter().any(|a| {
                a.path().is_ident("cfg")
                    && a.meta
                        .require_list()
                        .is_ok_and(|l| l.tokens.to_string().contains("test"))
            });
            let name = m.ident.to_string();
            if is_test || m.content.is_some() {
                continue;
            }
            if !doc.contains(&format!("`{name}`")) && !doc.contains(&format!("[`{name}`]")) {
                missing.push(format!("crates/{krate}/src/lib.rs: module `{name}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "modules not named in their lib.rs doc:\n{}",
        missing.join("\n")
    );
}

/// Collects the functions of one file longer than [`MAX_FN_LINES`].
struct LongFunctions<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl LongFunctions<'_> {
    fn check(&mut self, name: &syn::Ident, attrs: &[syn::Attribute], block: &syn::Block) {
        let lines = block.brace_token.span.close().end().line
            - block.brace_token.span.open().start().line
            + 1;
        let mirrors = attrs
            .iter()
            .any(|a| a.path().is_ident("doc") && quote_text(a).contains(MIRROR_PHRASE));
        if lines > MAX_FN_LINES && !mirrors {
            self.found
                .push(format!("{}: {name} ({lines} lines)", self.file));
        }
    }
}

fn quote_text(a: &syn::Attribute) -> String {
    match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => s.value(),
            _ => String::new(),
        },
        _ => String::new(),
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string() == "test")
    })
}

impl<'ast> Visit<'ast> for LongFunctions<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.check(&f.sig.ident, &f.attrs, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.check(&f.sig.ident, &f.attrs, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The long functions of the product code under `crates/*/src` (test modules and
/// files that only hold tests left out).
fn long_functions() -> Vec<String> {
    let mut files = Vec::new();
    for krate in crates() {
        rust_files(
            &workspace().join("crates").join(krate).join("src"),
            &mut files,
        );
    }
    let mut found = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let shown = path
            .strip_prefix(workspace())
            .unwrap_or(&path)
            .display()
            .to_string();
        let mut v = LongFunctions {
            file: &shown,
            found: Vec::new(),
        };
        v.visit_file(&file);
        found.extend(v.found);
    }
    found
}

#[test]
fn no_product_function_is_longer_than_150_lines() {
    let found = long_functions();
    assert!(
        found.is_empty(),
        "cut these into named steps, or say in the doc what of pgbench's own they mirror:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_length_rule_sees_a_long_function() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let text = format!(
        "fn long() {{\n{body}}}\n/// It mirrors pgbench's switch.\nfn exempt() {{\n{body}}}\n"
    );
    let file = syn::parse_file(&text).unwrap();
    let mut v = LongFunctions {
        file: "demo.rs",
        found: Vec::new(),
    };
    v.visit_file(&file);
    assert_eq!(v.found, ["demo.rs: long (152 lines)"]);
}
