//! A bash config read as bash would run it, without running it: the text is split into
//! words and commands by bash's quoting rules (quotes, `$(…)`, `${…}` and backquotes
//! may span lines; comments, line continuations and here-documents are skipped), and
//! each command is placed in what runs it — the top level, an `if`, `case` or loop, an
//! `&&`/`||` list, a pipeline, a subshell or a function body.
//!
//! Only an assignment the top level runs unconditionally sets a variable, in order. One
//! that bash runs only under a condition (an `if` branch, a `case` arm, a loop body,
//! after `&&` or `||`) or in a function that is called leaves the variable unknown until
//! the next top-level assignment: which value bash would have depends on what only bash
//! knows. An assignment in a function that is never called, in a pipeline, a subshell,
//! a background command or a here-document does not touch the config's variables at all.

use std::collections::BTreeMap;

/// One token of the text.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// A word as written (quotes kept), and the line it starts on.
    Word(String, usize),
    /// An operator (`;`, `&&`, `||`, `|`, `&`, `(`, `)`, `;;`, newline as `\n`).
    Op(&'static str, usize),
}

/// Splits `text` into words and operators by bash's quoting rules.
fn tokenize(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut t = Lexer {
        chars: &chars,
        i: 0,
        line: 1,
        out: Vec::new(),
        heredocs: Vec::new(),
    };
    t.run();
    t.out
}

struct Lexer<'a> {
    chars: &'a [char],
    i: usize,
    line: usize,
    out: Vec<Token>,
    /// Here-document delimiters whose bodies start after the current line.
    heredocs: Vec<(String, bool)>,
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn run(&mut self) {
        while self.i < self.chars.len() {
            let c = self.chars[self.i];
            match c {
                '\n' => {
                    self.out.push(Token::Op("\n", self.line));
                    self.i += 1;
                    self.line += 1;
                    self.skip_heredocs();
                }
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek(1) == Some('\n') => {
                    self.i += 2;
                    self.line += 1;
                }
                '#' => {
                    while self.i < self.chars.len() && self.chars[self.i] != '\n' {
                        self.i += 1;
                    }
                }
                ';' | '&' | '|' | '(' | ')' => self.operator(c),
                _ => self.word(),
            }
        }
    }

    fn operator(&mut self, c: char) {
        let two = self.peek(1);
        let op = match (c, two) {
            (';', Some(';')) => ";;",
            ('&', Some('&')) => "&&",
            ('|', Some('|')) => "||",
            (';', _) => ";",
            ('&', _) => "&",
            ('|', _) => "|",
            ('(', _) => "(",
            _ => ")",
        };
        self.out.push(Token::Op(op, self.line));
        self.i += op.len();
    }

    /// One word, quotes and substitutions included, up to unquoted blank or operator.
    fn word(&mut self) {
        let start = self.i;
        let line = self.line;
        while self.i < self.chars.len() {
            let c = self.chars[self.i];
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | ')' => break,
                // `NAME=(…)`: an array; any other `(` is an operator.
                '(' if self.i > start && self.chars[self.i - 1] == '=' => self.balanced('(', ')'),
                '(' => break,
                '\\' => self.step(2),
                '\'' => self.quoted('\''),
                '"' => self.quoted('"'),
                '`' => self.quoted('`'),
                '$' if self.peek(1) == Some('(') => {
                    self.i += 1;
                    self.balanced('(', ')');
                }
                '$' if self.peek(1) == Some('{') => {
                    self.i += 1;
                    self.balanced('{', '}');
                }
                _ => self.i += 1,
            }
        }
        if self.i == start {
            // A lone character no rule consumed.
            self.i += 1;
        }
        let text: String = self.chars[start..self.i].iter().collect();
        // `<<WORD` before any quote: a here-document whose body follows the line.
        let unquoted = text.split(['\'', '"']).next().unwrap_or("");
        let heredoc = unquoted
            .find("<<")
            .map(|at| &text[at + 2..])
            .filter(|r| !r.starts_with('<'));
        if let Some(rest) = heredoc {
            let (strip_tabs, rest) = match rest.strip_prefix('-') {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let delimiter: String = rest.chars().filter(|c| !"'\"\\".contains(*c)).collect();
            if !delimiter.is_empty() {
                self.heredocs.push((delimiter, strip_tabs));
            }
        }
        self.out.push(Token::Word(text, line));
    }

    /// Moves over `n` characters, counting lines.
    fn step(&mut self, n: usize) {
        for _ in 0..n {
            if self.chars.get(self.i) == Some(&'\n') {
                self.line += 1;
            }
            if self.i < self.chars.len() {
                self.i += 1;
            }
        }
    }

    /// From an opening quote to its closing one (escapes inside double quotes and
    /// backquotes, substitutions inside double quotes).
    fn quoted(&mut self, q: char) {
        self.step(1);
        while self.i < self.chars.len() {
            let c = self.chars[self.i];
            if c == q {
                self.step(1);
                return;
            }
            match c {
                '\\' if q != '\'' => self.step(2),
                '$' if q == '"' && self.peek(1) == Some('(') => {
                    self.i += 1;
                    self.balanced('(', ')');
                }
                '`' if q == '"' => self.quoted('`'),
                _ => self.step(1),
            }
        }
    }

    /// From `open` to its matching `close`, quotes inside skipped.
    fn balanced(&mut self, open: char, close: char) {
        let mut depth = 0usize;
        while self.i < self.chars.len() {
            let c = self.chars[self.i];
            match c {
                '\\' => self.step(2),
                '\'' | '"' | '`' => self.quoted(c),
                _ if c == open => {
                    depth += 1;
                    self.step(1);
                }
                _ if c == close => {
                    self.step(1);
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => self.step(1),
            }
        }
    }

    /// After a newline: the bodies of the here-documents the line opened.
    fn skip_heredocs(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            while self.i < self.chars.len() {
                let end = self.chars[self.i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(self.chars.len(), |p| self.i + p);
                let line: String = self.chars[self.i..end].iter().collect();
                self.i = (end + 1).min(self.chars.len());
                self.line += 1;
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter {
                    break;
                }
            }
        }
    }
}

/// What runs a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// The top level, every time the config is read.
    Always,
    /// Only when a condition holds: why, in words (`inside an \`if\` block`).
    Conditionally(String),
    /// Not the config's shell: a subshell, a pipeline, a background command, or a
    /// function body (`Some(name)`), which runs only when called.
    Elsewhere(Option<String>),
}

/// One simple command of the config.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// Its words as written (quotes kept), reserved words and `export` taken off.
    pub words: Vec<String>,
    /// Whether the words were only assignments (after `export`, `declare`…).
    pub assigns_only: bool,
    /// The line it starts on.
    pub line: usize,
    /// What runs it.
    pub runs: Runs,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Frame {
    If,
    Loop(&'static str),
    Case,
    Group,
    Subshell,
}

#[derive(Debug, Clone)]
struct Open {
    frame: Frame,
    /// The function whose body it is, if it is one.
    function: Option<String>,
}

const ASSIGNING_BUILTINS: &[&str] = &["export", "declare", "typeset", "readonly", "local"];

/// Whether `word` is `NAME=…` (or `NAME+=…`, an append): the name and the value as
/// written, `+=` leaving a `+` before the value.
pub fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    match name.strip_suffix('+') {
        Some(base) if super::is_name(base) => Some((base, &word[base.len()..])),
        _ => super::is_name(name).then_some((name, value)),
    }
}

/// The commands of `text`, each with what runs it, in order.
pub fn commands(text: &str) -> Vec<Command> {
    let tokens = tokenize(text);
    let mut out = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut pending_function: Option<String> = None;
    // The list connector before the command in hand (`&&`, `||`) and whether the
    // command in hand is piped or put in the background.
    let mut after_and_or = false;
    let mut after_pipe = false;
    let mut i = 0;
    while i < tokens.len() {
        // One simple command: its words up to an operator.
        let mut words: Vec<(String, usize)> = Vec::new();
        while let Some(Token::Word(w, line)) = tokens.get(i) {
            words.push((w.clone(), *line));
            i += 1;
        }
        let op = match tokens.get(i) {
            Some(Token::Op(op, _)) => {
                i += 1;
                *op
            }
            _ => "\n",
        };
        // `name ( )` or `function name ( )`: a function header; its body is the next
        // compound command.
        let header = match words.as_slice() {
            [(name, _)] => Some(name),
            [(kw, _), (name, _)] if kw == "function" => Some(name),
            _ => None,
        };
        if let (Some(name), "(", Some(Token::Op(")", _))) = (header, op, tokens.get(i)) {
            i += 1;
            pending_function = Some(name.clone());
            continue;
        }
        if op == "(" && words.is_empty() {
            stack.push(Open {
                frame: Frame::Subshell,
                function: pending_function.take(),
            });
            continue;
        }
        let piped = op == "|" || op == "&" || after_pipe;
        after_pipe = op == "|";
        let in_case = stack.last().is_some_and(|o| o.frame == Frame::Case);
        if op == ")" && in_case {
            // A `case` pattern.
            after_and_or = false;
            continue;
        }
        let mut rest: &[(String, usize)] = &words;
        // Reserved words at the start of a command open or close frames.
        while let Some((w, _)) = rest.first() {
            let w = w.as_str();
            match w {
                "if" => push(&mut stack, Frame::If, &mut pending_function),
                "while" | "until" => {
                    let kind = if w == "while" { "while" } else { "until" };
                    push(&mut stack, Frame::Loop(kind), &mut pending_function)
                }
                "for" | "select" => {
                    let kind = if w == "for" { "for" } else { "select" };
                    push(&mut stack, Frame::Loop(kind), &mut pending_function);
                    // `for NAME in WORDS`: the rest is the loop's header.
                    rest = &[];
                    break;
                }
                "case" => {
                    push(&mut stack, Frame::Case, &mut pending_function);
                    rest = &[];
                    break;
                }
                "{" => push(&mut stack, Frame::Group, &mut pending_function),
                "fi" | "done" | "}" | "esac" => {
                    stack.pop();
                }
                "then" | "elif" | "else" | "do" | "!" => {}
                "function" if rest.len() >= 2 => {
                    pending_function = Some(rest[1].0.clone());
                    rest = &rest[1..];
                }
                _ => break,
            }
            rest = &rest[1..];
        }
        if let Some((_, line)) = rest.first() {
            out.push(command(rest, *line, runs_of(&stack, after_and_or, piped)));
        }
        if op == ")" && stack.last().is_some_and(|o| o.frame == Frame::Subshell) {
            stack.pop();
        }
        after_and_or = matches!(op, "&&" | "||");
    }
    out
}

fn push(stack: &mut Vec<Open>, frame: Frame, pending_function: &mut Option<String>) {
    stack.push(Open {
        frame,
        function: pending_function.take(),
    });
}

fn command(words: &[(String, usize)], line: usize, runs: Runs) -> Command {
    let mut words: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
    let mut builtin = false;
    if words
        .first()
        .is_some_and(|w| ASSIGNING_BUILTINS.contains(&w.as_str()))
    {
        builtin = true;
        words.remove(0);
        words.retain(|w| !w.starts_with('-'));
    }
    let assigns_only = !words.is_empty()
        && words
            .iter()
            .all(|w| assignment(w).is_some() || (builtin && super::is_name(w)));
    Command {
        words,
        assigns_only,
        line,
        runs,
    }
}

/// What runs a command inside `stack`, after `&&`/`||` or in a pipeline.
fn runs_of(stack: &[Open], after_and_or: bool, piped: bool) -> Runs {
    if let Some(f) = stack.iter().find_map(|o| o.function.clone()) {
        return Runs::Elsewhere(Some(f));
    }
    if piped || stack.iter().any(|o| o.frame == Frame::Subshell) {
        return Runs::Elsewhere(None);
    }
    if let Some(o) = stack.iter().find(|o| o.frame != Frame::Group) {
        let why = match o.frame {
            Frame::If => "inside an `if` block".to_string(),
            Frame::Case => "inside a `case` arm".to_string(),
            Frame::Loop(kind) => format!("inside a `{kind}` loop"),
            Frame::Group | Frame::Subshell => String::new(),
        };
        return Runs::Conditionally(why);
    }
    if after_and_or {
        return Runs::Conditionally("after `&&` or `||`".into());
    }
    Runs::Always
}

/// The variables each function assigns, with the line of each assignment.
pub fn function_assignments(commands: &[Command]) -> BTreeMap<String, Vec<(String, usize)>> {
    let mut out: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for c in commands {
        if let (Runs::Elsewhere(Some(f)), true) = (&c.runs, c.assigns_only) {
            for w in &c.words {
                let name = assignment(w).map_or(w.as_str(), |(n, _)| n);
                out.entry(f.clone())
                    .or_default()
                    .push((name.to_string(), c.line));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> Vec<(String, Runs)> {
        commands(text)
            .into_iter()
            .map(|c| (c.words.join(" "), c.runs))
            .collect()
    }

    #[test]
    fn commands_are_placed_in_what_runs_them() {
        let text = "A=1\nB=\"x\nC=2\ny\"\nif false; then D=3; fi\nf() {\n  E=4\n}\n\
                    cat <<EOF\nF=5\nEOF\n[ -n x ] && G=6\n( H=7 )\nfor i in 1 2; do I=8; done\n\
                    case $x in a) J=9;; esac\nK=10 | cat\n{ L=11; }\n";
        let got = runs(text);
        let find = |w: &str| {
            got.iter()
                .find(|(c, _)| c.starts_with(w))
                .map(|(_, r)| r.clone())
        };
        assert_eq!(find("A=1"), Some(Runs::Always));
        assert_eq!(find("B="), Some(Runs::Always));
        assert_eq!(find("C=2"), None, "inside a string: {got:?}");
        assert_eq!(
            find("D=3"),
            Some(Runs::Conditionally("inside an `if` block".into()))
        );
        assert_eq!(find("E=4"), Some(Runs::Elsewhere(Some("f".into()))));
        assert_eq!(find("F=5"), None, "inside a here-document: {got:?}");
        assert_eq!(
            find("G=6"),
            Some(Runs::Conditionally("after `&&` or `||`".into()))
        );
        assert_eq!(find("H=7"), Some(Runs::Elsewhere(None)));
        assert_eq!(
            find("I=8"),
            Some(Runs::Conditionally("inside a `for` loop".into()))
        );
        assert_eq!(
            find("J=9"),
            Some(Runs::Conditionally("inside a `case` arm".into()))
        );
        assert_eq!(find("K=10"), Some(Runs::Elsewhere(None)));
        assert_eq!(find("L=11"), Some(Runs::Always));
    }
}
