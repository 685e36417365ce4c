//! A faithful model of glibc's `getopt_long` as pgbench uses it: GNU argument
//! permutation (or stop at the first operand under `POSIXLY_CORRECT`), `--` ending the
//! options, bundled short options (`-nS`, `-c10`), `--name=value` and `--name value`,
//! unambiguous abbreviations of long options, and glibc's exact error texts.
//!
//! It owns only the scanning of argv; what an option means is `parser.rs`'s business.
//! Arguments are bytes (argv on Unix need not be UTF-8).

/// Whether an option takes an argument (`struct option.has_arg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    /// `no_argument`.
    No,
    /// `required_argument`.
    Required,
    /// `optional_argument` (only as `--name=value`).
    Optional,
}

/// One long option: name, argument kind and the caller's identifier.
#[derive(Debug, Clone, Copy)]
pub struct LongOpt<T> {
    /// Name without the leading `--`.
    pub name: &'static str,
    /// Argument kind.
    pub has_arg: HasArg,
    /// What `next` reports when this option is found.
    pub id: T,
}

/// One short option letter.
#[derive(Debug, Clone, Copy)]
pub struct ShortOpt<T> {
    /// The option character, as in getopt's option string (`c` for `-c`).
    pub letter: u8,
    /// `false`: no argument; `true`: required argument (`x:` in the option string).
    pub takes_arg: bool,
    /// What `next` reports when this option is found.
    pub id: T,
}

/// What one step of the scan produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item<T> {
    /// An option and its argument, if any.
    Opt(T, Option<Vec<u8>>),
    /// getopt's complaint, without the `argv[0]: ` prefix (for example
    /// `invalid option -- 'x'`). pgbench then prints its hint and exits 1.
    Error(Vec<u8>),
}

/// The scanner. Iterate it to get options in argv order; then [`Getopt::operands`]
/// gives the non-option arguments in the order glibc leaves them after permutation.
pub struct Getopt<'a, T: Copy> {
    args: &'a [Vec<u8>],
    shorts: &'a [ShortOpt<T>],
    /// Long options, first tier: matched exactly like glibc does with this table.
    longs: &'a [LongOpt<T>],
    /// Second tier, consulted only when the first tier has no match at all, so adding
    /// options here never changes how an argument valid (or ambiguous) for the first
    /// tier is treated.
    extra_longs: &'a [LongOpt<T>],
    require_order: bool,
    /// Index of the next argument to examine.
    optind: usize,
    /// Inside a bundle of short options: (argument index, byte offset of next letter).
    bundle: Option<(usize, usize)>,
    operands: Vec<usize>,
    finished: bool,
}

impl<'a, T: Copy> Getopt<'a, T> {
    /// Creates a scanner over `args` (without the program name).
    ///
    /// `require_order`: stop at the first operand (glibc does this when the
    /// `POSIXLY_CORRECT` environment variable is set).
    pub fn new(
        args: &'a [Vec<u8>],
        shorts: &'a [ShortOpt<T>],
        longs: &'a [LongOpt<T>],
        extra_longs: &'a [LongOpt<T>],
        require_order: bool,
    ) -> Self {
        Getopt {
            args,
            shorts,
            longs,
            extra_longs,
            require_order,
            optind: 0,
            bundle: None,
            operands: Vec::new(),
            finished: false,
        }
    }

    /// The operands (non-option arguments) in glibc's post-permutation order: those
    /// met among the options first, then everything after `--` (or after the first
    /// operand in require-order mode). Complete once iteration returned `None`.
    pub fn operands(&self) -> Vec<&'a [u8]> {
        self.operands
            .iter()
            .map(|&i| self.args[i].as_slice())
            .collect()
    }

    fn finish_with_rest(&mut self, from: usize) {
        self.operands.extend(from..self.args.len());
        self.optind = self.args.len();
        self.finished = true;
    }

    fn next_short(&mut self, argi: usize, pos: usize) -> Item<T> {
        let arg = &self.args[argi];
        let letter = arg[pos];
        let rest_start = pos + 1;
        let at_end = rest_start >= arg.len();
        // Advance past this letter (or past the whole argument when it ends here).
        self.bundle = if at_end {
            None
        } else {
            Some((argi, rest_start))
        };
        let found = self
            .shorts
            .iter()
            .find(|s| s.letter == letter && letter != b':');
        let Some(short) = found else {
            let mut msg = b"invalid option -- '".to_vec();
            msg.push(letter);
            msg.push(b'\'');
            return Item::Error(msg);
        };
        if !short.takes_arg {
            return Item::Opt(short.id, None);
        }
        if !at_end {
            // `-c10`: the rest of this argument is the value.
            self.bundle = None;
            return Item::Opt(short.id, Some(arg[rest_start..].to_vec()));
        }
        if self.optind < self.args.len() {
            // `-c 10`: the next argument is the value, whatever it looks like.
            let value = self.args[self.optind].clone();
            self.optind += 1;
            return Item::Opt(short.id, Some(value));
        }
        let mut msg = b"option requires an argument -- '".to_vec();
        msg.push(letter);
        msg.push(b'\'');
        Item::Error(msg)
    }

    fn next_long(&mut self, argi: usize) -> Item<T> {
        let body = &self.args[argi][2..];
        let (name, value) = match body.iter().position(|&b| b == b'=') {
            Some(eq) => (&body[..eq], Some(&body[eq + 1..])),
            None => (body, None),
        };
        let opt = match lookup(self.longs, name) {
            Lookup::Found(o) => o,
            Lookup::Ambiguous(list) => {
                let mut msg = b"option '--".to_vec();
                msg.extend_from_slice(body);
                msg.extend_from_slice(b"' is ambiguous; possibilities:");
                for o in list {
                    msg.extend_from_slice(b" '--");
                    msg.extend_from_slice(o.name.as_bytes());
                    msg.push(b'\'');
                }
                return Item::Error(msg);
            }
            Lookup::None => match lookup(self.extra_longs, name) {
                Lookup::Found(o) => o,
                // Ambiguity among our own extensions only: say it the same way.
                Lookup::Ambiguous(list) => {
                    let mut msg = b"option '--".to_vec();
                    msg.extend_from_slice(body);
                    msg.extend_from_slice(b"' is ambiguous; possibilities:");
                    for o in list {
                        msg.extend_from_slice(b" '--");
                        msg.extend_from_slice(o.name.as_bytes());
                        msg.push(b'\'');
                    }
                    return Item::Error(msg);
                }
                Lookup::None => {
                    let mut msg = b"unrecognized option '--".to_vec();
                    msg.extend_from_slice(body);
                    msg.push(b'\'');
                    return Item::Error(msg);
                }
            },
        };
        match (opt.has_arg, value) {
            (HasArg::No, Some(_)) => Item::Error(
                format!("option '--{}' doesn't allow an argument", opt.name).into_bytes(),
            ),
            (_, Some(v)) => Item::Opt(opt.id, Some(v.to_vec())),
            (HasArg::Required, None) => {
                if self.optind < self.args.len() {
                    let v = self.args[self.optind].clone();
                    self.optind += 1;
                    Item::Opt(opt.id, Some(v))
                } else {
                    Item::Error(
                        format!("option '--{}' requires an argument", opt.name).into_bytes(),
                    )
                }
            }
            (_, None) => Item::Opt(opt.id, None),
        }
    }
}

enum Lookup<'t, T> {
    Found(&'t LongOpt<T>),
    Ambiguous(Vec<&'t LongOpt<T>>),
    None,
}

/// glibc's rule: an exact name wins; otherwise one prefix match is taken; several
/// prefix matches are ambiguous (pgbench's options all have distinct values, so
/// glibc's "same has_arg/flag/val" exception never applies), listed in table order.
fn lookup<'t, T>(table: &'t [LongOpt<T>], name: &[u8]) -> Lookup<'t, T> {
    if let Some(o) = table.iter().find(|o| o.name.as_bytes() == name) {
        return Lookup::Found(o);
    }
    let matches: Vec<&LongOpt<T>> = table
        .iter()
        .filter(|o| o.name.as_bytes().starts_with(name))
        .collect();
    match matches.len() {
        0 => Lookup::None,
        1 => Lookup::Found(matches[0]),
        _ => Lookup::Ambiguous(matches),
    }
}

impl<T: Copy> Iterator for Getopt<'_, T> {
    type Item = Item<T>;

    fn next(&mut self) -> Option<Item<T>> {
        if let Some((argi, pos)) = self.bundle {
            return Some(self.next_short(argi, pos));
        }
        loop {
            if self.finished || self.optind >= self.args.len() {
                self.finished = true;
                return None;
            }
            let argi = self.optind;
            let arg = &self.args[argi];
            if arg.as_slice() == b"--" {
                self.finish_with_rest(argi + 1);
                return None;
            }
            let is_option = arg.len() > 1 && arg[0] == b'-';
            if !is_option {
                if self.require_order {
                    self.finish_with_rest(argi);
                    return None;
                }
                self.operands.push(argi);
                self.optind += 1;
                continue;
            }
            self.optind += 1;
            if arg[1] == b'-' {
                return Some(self.next_long(argi));
            }
            return Some(self.next_short(argi, 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum O {
        A,
        C,
        N,
        Port,
        Progress,
        ProgressTs,
        Log,
        Ext,
        Opt,
    }

    const SHORTS: &[ShortOpt<O>] = &[
        ShortOpt {
            letter: b'a',
            takes_arg: false,
            id: O::A,
        },
        ShortOpt {
            letter: b'c',
            takes_arg: true,
            id: O::C,
        },
        ShortOpt {
            letter: b'n',
            takes_arg: false,
            id: O::N,
        },
    ];
    const LONGS: &[LongOpt<O>] = &[
        LongOpt {
            name: "client",
            has_arg: HasArg::Required,
            id: O::C,
        },
        LongOpt {
            name: "log",
            has_arg: HasArg::No,
            id: O::Log,
        },
        LongOpt {
            name: "port",
            has_arg: HasArg::Required,
            id: O::Port,
        },
        LongOpt {
            name: "progress",
            has_arg: HasArg::Required,
            id: O::Progress,
        },
        LongOpt {
            name: "progress-timestamp",
            has_arg: HasArg::No,
            id: O::ProgressTs,
        },
    ];
    const EXTRA: &[LongOpt<O>] = &[
        LongOpt {
            name: "json",
            has_arg: HasArg::Required,
            id: O::Ext,
        },
        LongOpt {
            name: "percentiles",
            has_arg: HasArg::Optional,
            id: O::Opt,
        },
    ];

    fn run(args: &[&str], posix: bool) -> (Vec<Item<O>>, Vec<String>) {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let mut g = Getopt::new(&args, SHORTS, LONGS, EXTRA, posix);
        let items: Vec<Item<O>> = g.by_ref().collect();
        let ops = g
            .operands()
            .iter()
            .map(|o| String::from_utf8_lossy(o).into_owned())
            .collect();
        (items, ops)
    }

    fn opt(o: O, v: Option<&str>) -> Item<O> {
        Item::Opt(o, v.map(|s| s.as_bytes().to_vec()))
    }

    fn err(s: &str) -> Item<O> {
        Item::Error(s.as_bytes().to_vec())
    }

    #[test]
    fn permutation_collects_operands_in_order() {
        let (items, ops) = run(&["x", "-a", "y", "-c", "5", "z"], false);
        assert_eq!(items, vec![opt(O::A, None), opt(O::C, Some("5"))]);
        assert_eq!(ops, ["x", "y", "z"]);
    }

    #[test]
    fn posixly_correct_stops_at_first_operand() {
        let (items, ops) = run(&["-a", "x", "-n"], true);
        assert_eq!(items, vec![opt(O::A, None)]);
        assert_eq!(ops, ["x", "-n"]);
    }

    #[test]
    fn double_dash_ends_options_and_keeps_earlier_operands_first() {
        let (items, ops) = run(&["a", "--", "-n", "b"], false);
        assert!(items.is_empty());
        assert_eq!(ops, ["a", "-n", "b"]);
    }

    #[test]
    fn single_dash_is_an_operand() {
        let (_, ops) = run(&["-", "-a"], false);
        assert_eq!(ops, ["-"]);
    }

    #[test]
    fn bundles_and_attached_values() {
        let (items, _) = run(&["-nac10", "-c", "-n"], false);
        assert_eq!(
            items,
            vec![
                opt(O::N, None),
                opt(O::A, None),
                opt(O::C, Some("10")),
                // the next argument is taken as the value even if it looks like an option
                opt(O::C, Some("-n")),
            ]
        );
    }

    #[test]
    fn short_errors() {
        assert_eq!(run(&["-x"], false).0, vec![err("invalid option -- 'x'")]);
        assert_eq!(run(&["-nx"], false).0[1], err("invalid option -- 'x'"));
        assert_eq!(run(&["-:"], false).0, vec![err("invalid option -- ':'")]);
        assert_eq!(
            run(&["-c"], false).0,
            vec![err("option requires an argument -- 'c'")]
        );
    }

    #[test]
    fn long_forms() {
        let (items, _) = run(&["--client=3", "--client", "4", "--cl=5", "--log"], false);
        assert_eq!(
            items,
            vec![
                opt(O::C, Some("3")),
                opt(O::C, Some("4")),
                opt(O::C, Some("5")),
                opt(O::Log, None)
            ]
        );
        // an exact name wins over being a prefix of another
        assert_eq!(
            run(&["--progress", "1"], false).0,
            vec![opt(O::Progress, Some("1"))]
        );
        // `--client=` gives an empty value
        assert_eq!(run(&["--client="], false).0, vec![opt(O::C, Some(""))]);
    }

    #[test]
    fn long_errors_use_glibc_texts() {
        assert_eq!(
            run(&["--p=5"], false).0,
            vec![err("option '--p=5' is ambiguous; possibilities: '--port' '--progress' '--progress-timestamp'")]
        );
        assert_eq!(
            run(&["--bad=3"], false).0,
            vec![err("unrecognized option '--bad=3'")]
        );
        assert_eq!(
            run(&["--lo=x"], false).0,
            vec![err("option '--log' doesn't allow an argument")]
        );
        assert_eq!(
            run(&["--cl"], false).0,
            vec![err("option '--client' requires an argument")]
        );
    }

    #[test]
    fn extension_tier_only_when_first_tier_has_no_match() {
        assert_eq!(run(&["--json=f"], false).0, vec![opt(O::Ext, Some("f"))]);
        assert_eq!(run(&["--js", "f"], false).0, vec![opt(O::Ext, Some("f"))]);
        assert_eq!(run(&["--percentiles"], false).0, vec![opt(O::Opt, None)]);
        assert_eq!(
            run(&["--perc=1,2"], false).0,
            vec![opt(O::Opt, Some("1,2"))]
        );
        // `--p` stays ambiguous among the first tier only
        assert!(
            matches!(&run(&["--p"], false).0[0], Item::Error(m) if !String::from_utf8_lossy(m).contains("percentiles"))
        );
    }
}
