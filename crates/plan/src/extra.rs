//! `[run] extra_args`: the pgbench flags a campaign file may hold, read once when the
//! campaign is loaded into the typed [`ExtraFlags`] it keeps (`Campaign::extra`), which
//! each test's `RunSpec` takes; anything else is refused at load.

/// The pgbench flags `[run] extra_args` may hold, kept for campaign files written when
/// those strings were handed to the pgbench parser. Each maps to a typed field of the
/// `RunSpec` (see `execute::run_spec`); anything else is refused when the campaign is
/// loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtraFlags {
    /// `--failures-detailed`.
    pub failures_detailed: bool,
    /// `--verbose-errors`.
    pub verbose_errors: bool,
    /// `--exit-on-abort`.
    pub exit_on_abort: bool,
    /// `-r` / `--report-per-command`.
    pub per_command: bool,
    /// `-C` / `--connect`.
    pub connect_per_transaction: bool,
    /// `--mix=random|deck`: how scripts are drawn (a workload pack's own mix otherwise).
    pub mix: Option<pgsurge_engine::Mix>,
    /// `--reconnect` (always on in a campaign with `[[fault]]`s).
    pub reconnect: bool,
}

/// Reads `[run] extra_args` into [`ExtraFlags`], or says which entry is not supported.
pub fn extra_flags(args: &[String]) -> std::result::Result<ExtraFlags, String> {
    let mut flags = ExtraFlags::default();
    for arg in args {
        match arg.as_str() {
            "--failures-detailed" => flags.failures_detailed = true,
            "--verbose-errors" => flags.verbose_errors = true,
            "--exit-on-abort" => flags.exit_on_abort = true,
            "-r" | "--report-per-command" | "--report-latencies" => flags.per_command = true,
            "-C" | "--connect" => flags.connect_per_transaction = true,
            "--mix=random" => flags.mix = Some(pgsurge_engine::Mix::Random),
            "--mix=deck" => flags.mix = Some(pgsurge_engine::Mix::Deck),
            "--reconnect" => flags.reconnect = true,
            other => {
                return Err(format!(
                    "\"{other}\" is not supported; extra_args may hold --failures-detailed, \
                     --verbose-errors, --exit-on-abort, --report-per-command (-r), \
                     --connect (-C), --reconnect and --mix=random|deck; use the [run] keys \
                     for the other \
                     options"
                ))
            }
        }
    }
    Ok(flags)
}

#[cfg(test)]
mod extra_flag_tests {
    use super::*;

    #[test]
    fn mix_is_one_of_the_extra_flags() {
        let f = extra_flags(&["--mix=random".into(), "--failures-detailed".into()]).unwrap();
        assert_eq!(f.mix, Some(pgsurge_engine::Mix::Random));
        assert!(f.failures_detailed);
        let f = extra_flags(&["--mix=deck".into()]).unwrap();
        assert_eq!(f.mix, Some(pgsurge_engine::Mix::Deck));
        assert_eq!(extra_flags(&[]).unwrap().mix, None);
        let e = extra_flags(&["--mix=shuffle".into()]).unwrap_err();
        assert!(
            e.contains("--mix=shuffle") && e.contains("--mix=random|deck"),
            "{e}"
        );
    }
}
