//! The house rules of the workspace, checked on its sources: the crate layers of
//! `docs/architecture.md` hold (every dependency points down), every `lib.rs` names each
//! of its modules, no product function is longer than [`MAX_FN_LINES`] lines unless
//! its doc says that it mirrors pgbench's or libpq's own code, inside each crate no
//! more than [`MAX_CIRCLE`] files use each other's items in a circle, no product file
//! holds more than [`MAX_FILE_LINES`] lines, `campaign`
//! holds fewer than [`MAX_CAMPAIGN_LINES`], and the helpers of [`ONE_HOME`] have no
//! hand-written copy outside their home.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The longest product function allowed, in lines (braces included).
const MAX_FN_LINES: usize = 150;

/// The phrase that lets a function be longer: a match table or state machine that
/// follows pgbench's (or libpq's) own, case by case.
const MIRROR_PHRASE: &str = "mirrors";

pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every crate directory under `crates/`.
pub(crate) fn crates() -> Vec<String> {
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

/// The "depends on" column of docs/architecture.md's crate table, by crate: each
/// entry's first word (a note in parentheses after it is prose); `—` is none. The `cli`
/// row ("everything above") is left out.
fn documented_dependencies(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = doc
        .find("| crate | owns (one job) | depends on |")
        .expect("docs/architecture.md has the crate table");
    let mut out = BTreeMap::new();
    for line in doc[start..].lines().skip(2) {
        if !line.starts_with("| `") {
            break;
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
        let krate = cells[0].trim().trim_matches('`').to_string();
        if krate == "cli" {
            continue;
        }
        let column = cells.last().unwrap().trim();
        let mut deps = BTreeSet::new();
        let mut depth = 0usize;
        let mut entry = String::new();
        // Commas inside a parenthesised note do not separate entries.
        for ch in column.chars().chain(std::iter::once(',')) {
            match ch {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    let word = entry.split_whitespace().next().unwrap_or("");
                    if !word.is_empty() && word != "—" {
                        deps.insert(word.to_string());
                    }
                    entry.clear();
                    continue;
                }
                _ => {}
            }
            if depth == 0 && ch != ')' {
                entry.push(ch);
            }
        }
        out.insert(krate, deps);
    }
    out
}

#[test]
fn the_crate_tables_dependencies_are_the_manifests() {
    let doc = std::fs::read_to_string(workspace().join("docs/architecture.md")).unwrap();
    let documented = documented_dependencies(&doc);
    let mut wrong = Vec::new();
    for krate in crates() {
        if krate == "testkit" || krate == "cli" {
            continue;
        }
        let Some(said) = documented.get(&krate) else {
            wrong.push(format!("{krate} has no row in the crate table"));
            continue;
        };
        let real: BTreeSet<String> = dependencies(&krate)
            .iter()
            .map(|d| {
                d.split(" (")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches(')')
                    .to_string()
            })
            .collect();
        for missing in real.difference(said) {
            wrong.push(format!(
                "{krate} depends on {missing}; the table does not say so"
            ));
        }
        for extra in said.difference(&real) {
            wrong.push(format!(
                "the table says {krate} depends on {extra}; it does not"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_table_rule_reads_entries_and_skips_notes() {
    let doc = "| crate | owns (one job) | depends on |\n|---|---|---|\n\
               | `a` | x | — |\n\
               | `b` | y (z) | a, c (for q, r only), d |\n\n| `c` | after | a |\n";
    let t = documented_dependencies(doc);
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(t["a"].is_empty());
    let b: Vec<&str> = t["b"].iter().map(String::as_str).collect();
    assert_eq!(b, ["a", "c", "d"]);
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

pub(crate) fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
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

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// Names of functions that compute a statistic or a judgement: outside the `analysis`
/// crate a product function of one of these names is a second copy of a statistic.
const STATISTIC_NAMES: &[&str] = &[
    "median",
    "geometric_mean",
    "variance",
    "mann_whitney",
    "hodges_lehmann",
    "welch_change",
    "relative_change",
    "paired_change",
    "mean_interval",
    "t_quantile",
    "outliers",
    "steady_state",
    "change_points",
];

/// Product functions named like a statistic, per file, outside the `analysis` crate.
struct StatisticFunctions<'a> {
    file: &'a str,
    found: Vec<String>,
}

impl StatisticFunctions<'_> {
    fn check(&mut self, name: &syn::Ident) {
        let name = name.to_string();
        if STATISTIC_NAMES.contains(&name.as_str()) {
            self.found.push(format!("{}: fn {name}", self.file));
        }
    }
}

impl<'ast> Visit<'ast> for StatisticFunctions<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.check(&f.sig.ident);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.check(&f.sig.ident);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
}

fn statistic_functions(text: &str, shown: &str) -> Vec<String> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{shown}: {e}"));
    let mut v = StatisticFunctions {
        file: shown,
        found: Vec::new(),
    };
    v.visit_file(&file);
    v.found
}

#[test]
fn statistics_are_computed_in_the_analysis_crate_only() {
    let mut found = Vec::new();
    for krate in crates().into_iter().filter(|k| k != "analysis") {
        let manifest = workspace().join("crates").join(&krate).join("Cargo.toml");
        let manifest: toml::Value =
            toml::from_str(&std::fs::read_to_string(manifest).unwrap()).unwrap();
        if manifest
            .get("dependencies")
            .and_then(|d| d.get("statrs"))
            .is_some()
        {
            found.push(format!("crates/{krate}/Cargo.toml: statrs"));
        }
        let mut files = Vec::new();
        rust_files(
            &workspace().join("crates").join(&krate).join("src"),
            &mut files,
        );
        for path in files {
            let shown = path
                .strip_prefix(workspace())
                .unwrap_or(&path)
                .display()
                .to_string();
            found.extend(statistic_functions(
                &std::fs::read_to_string(&path).unwrap(),
                &shown,
            ));
        }
    }
    assert!(
        found.is_empty(),
        "statistics belong in crates/analysis (call them from there):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_statistics_rule_sees_a_copy() {
    let text = "fn median(v: &[f64]) -> f64 { v[0] }\n#[cfg(test)]\nmod tests { fn median() {} }\n";
    assert_eq!(statistic_functions(text, "x.rs"), ["x.rs: fn median"]);
}

/// The largest circle of files allowed inside one crate: a file and its child module
/// may use each other (`super::`), and a third file may join them; a longer circle
/// means the crate has no order of layers.
const MAX_CIRCLE: usize = 3;

/// File → the files it uses.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// A module path inside a crate (`["backend", "postgres"]`; the crate root is `[]`).
type ModPath = Vec<String>;

/// What one module (a file, or an inline `mod` in a file) holds, as far as the import
/// graph needs it.
#[derive(Default)]
struct ModuleInfo {
    /// The file module that holds it (itself for a file).
    file: ModPath,
    /// The names of the items it defines.
    items: BTreeSet<String>,
    /// Its `use` items: the name brought in → the path it names.
    uses: BTreeMap<String, Vec<String>>,
    /// Its glob imports (`use a::b::*`): the module paths.
    globs: Vec<Vec<String>>,
    /// The paths its code names (items, types, expressions, macros), before resolution.
    paths: Vec<Vec<String>>,
}

/// Reads one module's items (test items left out) into `out`, inline modules as their own entries.
fn read_module(
    path: &ModPath,
    file: &ModPath,
    items: &[syn::Item],
    out: &mut BTreeMap<ModPath, ModuleInfo>,
) {
    let mut info = ModuleInfo {
        file: file.clone(),
        ..ModuleInfo::default()
    };
    for item in items {
        if is_cfg_test(item_attrs(item)) {
            continue;
        }
        if let Some(name) = item_name(item) {
            info.items.insert(name);
        }
        match item {
            syn::Item::Use(u) => flatten_use(&u.tree, Vec::new(), &mut info),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    let mut child = path.clone();
                    child.push(m.ident.to_string());
                    read_module(&child, file, inner, out);
                }
            }
            other => {
                let mut paths = PathCollector::default();
                paths.visit_item(other);
                info.paths.extend(paths.found);
            }
        }
    }
    out.insert(path.clone(), info);
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Adds the imports of one `use` tree to `info`.
fn flatten_use(tree: &syn::UseTree, mut prefix: Vec<String>, info: &mut ModuleInfo) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, info);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last().cloned() {
                    info.uses.insert(last, prefix.clone());
                }
            } else {
                prefix.push(name.clone());
                info.uses.insert(name, prefix.clone());
            }
            info.paths.push(prefix);
        }
        syn::UseTree::Rename(r) => {
            prefix.push(r.ident.to_string());
            info.uses.insert(r.rename.to_string(), prefix.clone());
            info.paths.push(prefix);
        }
        syn::UseTree::Glob(_) => {
            info.globs.push(prefix.clone());
            info.paths.push(prefix);
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix.clone(), info);
            }
        }
    }
}

/// Collects every path written in code: types, expressions, patterns, macro names, and
/// `crate::`/`super::`/`self::` paths inside macro arguments.
#[derive(Default)]
struct PathCollector {
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for PathCollector {
    /// `pub(super)` and `pub(in path)` say who may see an item, not what it uses.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.found
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let mut tokens = Vec::new();
        flatten_tokens(m.tokens.clone(), &mut tokens);
        for (i, t) in tokens.iter().enumerate() {
            let starts = matches!(t.as_str(), "crate" | "super" | "self")
                && (i == 0 || tokens[i - 1] != "::");
            if !starts {
                continue;
            }
            let mut path = vec![t.clone()];
            let mut j = i + 1;
            while j + 1 < tokens.len() && tokens[j] == "::" {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            if path.len() > 1 {
                self.found.push(path);
            }
        }
        syn::visit::visit_macro(self, m);
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
}

/// The identifiers and `::` of a token stream, groups opened.
fn flatten_tokens(stream: proc_macro2::TokenStream, out: &mut Vec<String>) {
    let mut colon = false;
    for t in stream {
        match t {
            proc_macro2::TokenTree::Group(g) => {
                out.push("(".into());
                flatten_tokens(g.stream(), out);
                out.push(")".into());
                colon = false;
            }
            proc_macro2::TokenTree::Ident(i) => {
                out.push(i.to_string());
                colon = false;
            }
            proc_macro2::TokenTree::Punct(p) => {
                if p.as_char() == ':' && p.spacing() == proc_macro2::Spacing::Joint {
                    colon = true;
                } else if p.as_char() == ':' && colon {
                    out.push("::".into());
                    colon = false;
                } else {
                    out.push(p.as_char().to_string());
                    colon = false;
                }
            }
            proc_macro2::TokenTree::Literal(_) => {
                out.push("\"".into());
                colon = false;
            }
        }
    }
}

/// The module files of the crate whose root is `root` (`src/lib.rs` or `src/main.rs`),
/// found through its `mod` items (test modules left out), parsed.
fn crate_files(root: &Path) -> BTreeMap<ModPath, syn::File> {
    let mut files = BTreeMap::new();
    let dir = root.parent().unwrap().to_path_buf();
    add_file(Vec::new(), root, &dir, &mut files);
    files
}

fn add_file(path: ModPath, file: &Path, dir: &Path, files: &mut BTreeMap<ModPath, syn::File>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    add_children(&path, &parsed.items, dir, files);
    files.insert(path, parsed);
}

/// Finds the files of the `mod name;` items among `items`, whose files live in `dir`.
fn add_children(
    path: &ModPath,
    items: &[syn::Item],
    dir: &Path,
    files: &mut BTreeMap<ModPath, syn::File>,
) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if is_cfg_test(&m.attrs) {
            continue;
        }
        let name = m.ident.to_string();
        let mut child = path.clone();
        child.push(name.clone());
        match &m.content {
            Some((_, inner)) => add_children(&child, inner, &dir.join(&name), files),
            None => {
                let flat = dir.join(format!("{name}.rs"));
                if flat.exists() {
                    add_file(child, &flat, &dir.join(&name), files);
                } else {
                    let nested = dir.join(&name).join("mod.rs");
                    add_file(child, &nested, &dir.join(&name), files);
                }
            }
        }
    }
}

/// The graph "file A uses an item of file B" of one crate, the crate root left out (it
/// only declares and re-exports the modules).
fn import_graph(files: &BTreeMap<ModPath, syn::File>) -> Graph {
    let mut modules = BTreeMap::new();
    for (path, file) in files {
        read_module(path, path, &file.items, &mut modules);
    }
    let show = |p: &ModPath| p.join("::");
    let mut graph: Graph = BTreeMap::new();
    for path in files.keys().filter(|p| !p.is_empty()) {
        graph.entry(show(path)).or_default();
    }
    for (path, info) in &modules {
        if info.file.is_empty() {
            continue;
        }
        for written in &info.paths {
            let Some(target) = resolve(&modules, path, written, 0) else {
                continue;
            };
            let to = &modules[&target].file;
            if !to.is_empty() && *to != info.file {
                graph.get_mut(&show(&info.file)).unwrap().insert(show(to));
            }
        }
    }
    graph
}

/// The module that the path `written`, seen from module `from`, names an item of (or
/// is); `None` for a path outside the crate.
fn resolve(
    modules: &BTreeMap<ModPath, ModuleInfo>,
    from: &ModPath,
    written: &[String],
    depth: usize,
) -> Option<ModPath> {
    if depth > 8 || written.is_empty() {
        return None;
    }
    let (mut at, rest): (ModPath, &[String]) = match written[0].as_str() {
        "crate" => (Vec::new(), &written[1..]),
        "self" => (from.clone(), &written[1..]),
        "super" => {
            let mut at = from.clone();
            let mut i = 0;
            while written.get(i).is_some_and(|s| s == "super") {
                at.pop();
                i += 1;
            }
            (at, &written[i..])
        }
        first => {
            let mut child = from.clone();
            child.push(first.to_string());
            if modules.contains_key(&child) {
                (from.clone(), written)
            } else if let Some(imported) = modules[from].uses.get(first) {
                if imported.len() == 1 && imported[0] == first {
                    return None;
                }
                let mut full = imported.clone();
                full.extend(written[1..].iter().cloned());
                return resolve(modules, from, &full, depth + 1);
            } else {
                return None;
            }
        }
    };
    for (i, seg) in rest.iter().enumerate() {
        let mut child = at.clone();
        child.push(seg.clone());
        if modules.contains_key(&child) {
            at = child;
            continue;
        }
        let info = &modules[&at];
        if info.items.contains(seg) {
            return Some(at);
        }
        if let Some(imported) = info.uses.get(seg) {
            let mut full = imported.clone();
            full.extend(rest[i + 1..].iter().cloned());
            return resolve(modules, &at, &full, depth + 1).or(Some(at));
        }
        for glob in &info.globs {
            let mut full = glob.clone();
            full.extend(rest[i..].iter().cloned());
            if let Some(found) = resolve(modules, &at, &full, depth + 1) {
                if modules[&found].items.contains(seg) || modules[&found].uses.contains_key(seg) {
                    return Some(found);
                }
            }
        }
        return Some(at);
    }
    Some(at)
}

/// The strongly connected parts of `graph` with more than one file (Tarjan's algorithm).
fn strong_parts(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.graph[v] {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut part = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    part.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

/// A circle of more than [`MAX_CIRCLE`] files inside `part` (one strongly connected
/// part of `graph`), if there is one: the files in order, the first one again at the end.
fn long_circle_in(graph: &Graph, part: &[String]) -> Option<Vec<String>> {
    fn extend(graph: &Graph, part: &[String], path: &mut Vec<String>) -> bool {
        let last = path.last().unwrap().clone();
        for next in &graph[&last] {
            if !part.contains(next) || *next < path[0] {
                continue;
            }
            if *next == path[0] {
                if path.len() > MAX_CIRCLE {
                    path.push(next.clone());
                    return true;
                }
                continue;
            }
            if path.contains(next) {
                continue;
            }
            path.push(next.clone());
            if extend(graph, part, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    part.iter().find_map(|start| {
        let mut path = vec![start.clone()];
        extend(graph, part, &mut path).then_some(path)
    })
}

/// The circles of more than [`MAX_CIRCLE`] files of one crate, one per strongly connected
/// part, each named file by file.
fn long_circles(name: &str, files: &BTreeMap<ModPath, syn::File>) -> Vec<String> {
    let graph = import_graph(files);
    strong_parts(&graph)
        .iter()
        .filter_map(|part| long_circle_in(&graph, part))
        .map(|c| format!("{name}: {}", c.join(" → ")))
        .collect()
}

#[test]
fn no_crate_has_a_file_import_circle_of_more_than_three_files() {
    let mut found = Vec::new();
    for krate in crates() {
        for root in ["lib.rs", "main.rs"] {
            let path = workspace()
                .join("crates")
                .join(&krate)
                .join("src")
                .join(root);
            if path.exists() {
                found.extend(long_circles(
                    &format!("crates/{krate}/src/{root}"),
                    &crate_files(&path),
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "files that use each other in a circle (move the shared item down to a file they all use):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_rule_sees_a_circle() {
    let mut files = BTreeMap::new();
    let mut set = |path: &str, text: &str| {
        let key: ModPath = path
            .split("::")
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        files.insert(key, syn::parse_file(text).unwrap());
        long_circles("demo", &files)
    };
    set("", "mod a; mod b; mod c; mod d; mod e; pub use e::*;");
    set("a", "pub struct A; fn f(_: crate::b::B) {}");
    set("b", "use crate::{c::C as Sea}; pub struct B(Sea);");
    set(
        "c",
        "pub struct C; fn g() { let _ = format!(\"{}\", crate::d::D); }",
    );
    set("d", "pub struct D; fn h() -> crate::E { crate::E }");
    let none = set(
        "e",
        "pub struct E; #[cfg(test)] mod tests { use crate::a::A; }",
    );
    assert!(none.is_empty(), "a test module closes no circle: {none:?}");

    let five = set("e", "pub struct E; fn k(_: super::a::A) {}");
    assert_eq!(five, ["demo: a → b → c → d → e → a"]);

    let four = set("e", "pub struct E; fn k(_: crate::b::B) {}");
    assert_eq!(four, ["demo: b → c → d → e → b"]);

    let three = set("e", "pub struct E; fn k(_: crate::c::C) {}");
    assert!(three.is_empty(), "c, d, e is a circle of three: {three:?}");

    // A parent and its children that each use the other: circles of two files.
    set("", "mod p;");
    set(
        "p",
        "mod x; mod y; mod z; pub use x::X; pub use y::Y; pub use z::Z; pub struct P;",
    );
    set("p::x", "pub struct X(super::P);");
    set("p::y", "pub struct Y(super::P, crate::p::x::X);");
    let star = set("p::z", "pub struct Z(super::P);");
    assert!(star.is_empty(), "{star:?}");
    let four = set("p::z", "pub struct Z(super::P, super::y::Y);");
    assert_eq!(four, ["demo: p → p::z → p::y → p::x → p"]);
}

/// The most lines of product code one file may hold (its test module left out).
const MAX_FILE_LINES: usize = 1000;

/// The most lines of product code the `campaign` crate may hold: what runs campaigns,
/// with the campaign file itself in `plan`, the statistics in `analysis` and process
/// supervision in `supervisor`.
const MAX_CAMPAIGN_LINES: usize = 6000;

/// Each product file under `crates/*/src` (files that only hold tests left out) with its
/// lines of product code: the lines before its test module (`#[cfg(test)]` at the start
/// of a line), as the workspace writes it last in a file.
fn product_lines() -> Vec<(String, usize)> {
    let mut files = Vec::new();
    for krate in crates() {
        rust_files(
            &workspace().join("crates").join(krate).join("src"),
            &mut files,
        );
    }
    let mut out = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = text
            .lines()
            .take_while(|l| !l.starts_with("#[cfg(test)]"))
            .count();
        let shown = path
            .strip_prefix(workspace())
            .unwrap_or(&path)
            .display()
            .to_string();
        out.push((shown, lines));
    }
    out.sort();
    out
}

#[test]
fn no_product_file_is_over_1000_lines() {
    let wrong: Vec<String> = product_lines()
        .into_iter()
        .filter(|(_, lines)| *lines > MAX_FILE_LINES)
        .map(|(file, lines)| format!("{file}: {lines} lines"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn campaign_holds_under_6000_lines_of_product_code() {
    let total: usize = product_lines()
        .iter()
        .filter(|(file, _)| file.starts_with("crates/campaign/src/"))
        .map(|(_, lines)| lines)
        .sum();
    assert!(
        total > 1000,
        "campaign's files were not found: {total} lines"
    );
    assert!(
        total < MAX_CAMPAIGN_LINES,
        "campaign holds {total} lines of product code"
    );
}

#[test]
fn the_campaign_file_statistics_supervisor_and_records_do_not_depend_on_campaign() {
    for krate in ["plan", "analysis", "supervisor", "records"] {
        let deps = dependencies(krate);
        assert!(
            !deps.iter().any(|d| d.ends_with("(campaign)")),
            "{krate} → campaign: {deps:?}"
        );
    }
}

/// The helpers with one home, each with the text that gives a hand-written copy away:
/// (helper, its home, the texts that must all be in a file for it to hold a copy).
const ONE_HOME: &[(&str, &str, &[&str])] = &[
    (
        "a percent-decoder (use the percent-encoding crate)",
        "",
        &["b'%'", "to_digit(16)"],
    ),
    (
        "a percent-decoder (use the percent-encoding crate)",
        "",
        &["b'%'", "from_str_radix("],
    ),
    (
        "shell quoting (use pgsurge_command::shell_word)",
        "",
        &["\"'\\\\''\""],
    ),
    (
        "shell quoting (use pgsurge_command::shell_word)",
        "",
        &["r\"'\\''\""],
    ),
    (
        "SQL literal quoting (use pgsurge_wire::quote_literal)",
        "crates/wire/src/lib.rs",
        &["replace('\\'', \"''\")"],
    ),
    (
        "identifier quoting (use pgsurge_wire::quote_identifier)",
        "crates/wire/src/lib.rs",
        &["replace('\"', \"\\\"\\\"\")"],
    ),
    (
        "conninfo value quoting (use pgsurge_wire::quote_conninfo)",
        "crates/wire/src/conninfo.rs",
        &["replace('\\'', \"\\\\'\")"],
    ),
];

/// The helpers of [`ONE_HOME`] that `text` (the product code of `file`) holds a copy of.
fn helper_copies(file: &str, text: &str) -> Vec<&'static str> {
    ONE_HOME
        .iter()
        .filter(|(_, home, marks)| file != *home && marks.iter().all(|m| text.contains(m)))
        .map(|(what, _, _)| *what)
        .collect()
}

#[test]
fn each_helper_has_one_home() {
    let mut files = Vec::new();
    for krate in crates() {
        rust_files(
            &workspace().join("crates").join(krate).join("src"),
            &mut files,
        );
    }
    let mut wrong = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let product: String = text
            .lines()
            .take_while(|l| !l.starts_with("#[cfg(test)]"))
            .collect::<Vec<_>>()
            .join("\n");
        let shown = path
            .strip_prefix(workspace())
            .unwrap_or(&path)
            .display()
            .to_string();
        for what in helper_copies(&shown, &product) {
            wrong.push(format!("{shown}: {what}"));
        }
    }
    assert!(wrong.is_empty(), "copies:\n{}", wrong.join("\n"));
}

#[test]
fn the_one_home_rule_sees_a_copy() {
    let decoder = "fn d(b: &[u8]) { if b[0] == b'%' { (b[1] as char).to_digit(16); } }";
    assert_eq!(
        helper_copies("x.rs", decoder),
        ["a percent-decoder (use the percent-encoding crate)"]
    );
    let quote = "fn q(s: &str) -> String { format!(\"'{}'\", s.replace('\\'', \"'\\\\''\")) }";
    assert_eq!(
        helper_copies("x.rs", quote),
        ["shell quoting (use pgsurge_command::shell_word)"]
    );
    let ident =
        "fn i(s: &str) -> String { format!(\"\\\"{}\\\"\", s.replace('\"', \"\\\"\\\"\")) }";
    assert_eq!(
        helper_copies("x.rs", ident),
        ["identifier quoting (use pgsurge_wire::quote_identifier)"]
    );
    assert!(helper_copies("crates/wire/src/lib.rs", ident).is_empty());
    let literal = "fn l(s: &str) -> String { format!(\"'{}'\", s.replace('\\'', \"''\")) }";
    assert_eq!(
        helper_copies("x.rs", literal),
        ["SQL literal quoting (use pgsurge_wire::quote_literal)"]
    );
    let conninfo =
        "fn c(v: &str) -> String { format!(\"'{}'\", v.replace('\\\\', \"\\\\\\\\\").replace('\\'', \"\\\\'\")) }";
    assert_eq!(
        helper_copies("x.rs", conninfo),
        ["conninfo value quoting (use pgsurge_wire::quote_conninfo)"]
    );
    assert!(helper_copies("x.rs", "fn f() -> u32 { 16 }").is_empty());
}
