//! CPU affinity: the CPU lists of `--cpus` and `[pinning]` (the kernel's own notation,
//! `0-3,6`, as `taskset -c` and `/sys/devices/system/cpu/online` write it), checked
//! against the online CPUs, applied to the calling thread (the threads it starts
//! inherit it) or to a process about to `exec`, and read back from `/proc`.

use std::fmt;

/// The most CPUs a list may name (the kernel's `cpu_set_t` default size).
pub const MAX_CPUS: usize = 1024;

/// A set of CPU numbers, in ascending order, without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CpuList(Vec<usize>);

/// Why a CPU list was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuListError(String);

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CpuListError {}

impl CpuList {
    /// Parses `0-3,6,8-9` (spaces around items are allowed).
    pub fn parse(text: &str) -> Result<CpuList, CpuListError> {
        let bad = |why: &str| CpuListError(format!("invalid CPU list \"{text}\": {why}"));
        let mut cpus = Vec::new();
        if text.trim().is_empty() {
            return Err(bad("it is empty"));
        }
        for item in text.split(',') {
            let item = item.trim();
            let number = |s: &str| -> Result<usize, CpuListError> {
                let n: usize = s
                    .trim()
                    .parse()
                    .map_err(|_| bad(&format!("\"{s}\" is not a CPU number")))?;
                if n >= MAX_CPUS {
                    return Err(bad(&format!("CPU {n} is beyond {}", MAX_CPUS - 1)));
                }
                Ok(n)
            };
            match item.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (number(lo)?, number(hi)?);
                    if lo > hi {
                        return Err(bad(&format!("range {lo}-{hi} runs backwards")));
                    }
                    cpus.extend(lo..=hi);
                }
                None => cpus.push(number(item)?),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// True when the two lists share a CPU.
    pub fn overlaps(&self, other: &CpuList) -> bool {
        self.0.iter().any(|c| other.0.binary_search(c).is_ok())
    }

    /// Refuses a list that names a CPU that is not online, naming the online ones.
    pub fn check_online(&self) -> Result<(), CpuListError> {
        let online = online()?;
        let missing: Vec<usize> = self
            .0
            .iter()
            .copied()
            .filter(|c| online.0.binary_search(c).is_err())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(CpuListError(format!(
                "CPU list {self} names CPU{} {} that {} not online (online: {online})",
                if missing.len() == 1 { "" } else { "s" },
                CpuList(missing.clone()),
                if missing.len() == 1 { "is" } else { "are" }
            )))
        }
    }

    fn cpu_set(&self) -> rustix::thread::CpuSet {
        let mut set = rustix::thread::CpuSet::new();
        for &c in &self.0 {
            set.set(c);
        }
        set
    }

    /// Pins the calling thread, and so every thread and process it starts from now on,
    /// to these CPUs.
    pub fn pin_current_thread(&self) -> std::io::Result<()> {
        rustix::thread::sched_setaffinity(None, &self.cpu_set()).map_err(std::io::Error::from)
    }

    /// Runs `f` (which starts a process) with the calling thread pinned to these CPUs,
    /// then gives the thread its CPUs back: the process, and every process it forks,
    /// keeps the pinning.
    pub fn while_pinned<T>(&self, f: impl FnOnce() -> T) -> std::io::Result<T> {
        let before = rustix::thread::sched_getaffinity(None).map_err(std::io::Error::from)?;
        self.pin_current_thread()?;
        let out = f();
        rustix::thread::sched_setaffinity(None, &before).map_err(std::io::Error::from)?;
        Ok(out)
    }
}

impl fmt::Display for CpuList {
    /// The kernel's notation, ranges collapsed: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`; else those this process may
/// run on).
pub fn online() -> Result<CpuList, CpuListError> {
    if let Ok(text) = std::fs::read_to_string("/sys/devices/system/cpu/online") {
        if let Ok(list) = CpuList::parse(text.trim()) {
            return Ok(list);
        }
    }
    current()
}

/// The CPUs the calling thread may run on.
pub fn current() -> Result<CpuList, CpuListError> {
    let set = rustix::thread::sched_getaffinity(None)
        .map_err(|e| CpuListError(format!("cannot read the CPU affinity: {e}")))?;
    Ok(CpuList((0..MAX_CPUS).filter(|&c| set.is_set(c)).collect()))
}

/// The CPUs a process (or a thread: `PID/task/TID`) may run on, from
/// `/proc/<path>/status`'s `Cpus_allowed_list`.
pub fn of_proc(path: &str) -> Option<CpuList> {
    let status = std::fs::read_to_string(format!("/proc/{path}/status")).ok()?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuList::parse(line.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_in_the_kernel_notation() {
        let l = CpuList::parse("6, 0-3,2").unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 3, 6]);
        assert_eq!(l.to_string(), "0-3,6");
        assert_eq!(CpuList::parse("5").unwrap().to_string(), "5");
        for bad in ["", "a", "3-1", "1-", "-1", "0,,1", "4096"] {
            let e = CpuList::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("invalid CPU list"), "{bad}: {e}");
        }
        assert!(CpuList::parse("0-1")
            .unwrap()
            .overlaps(&CpuList::parse("1,5").unwrap()));
        assert!(!CpuList::parse("0")
            .unwrap()
            .overlaps(&CpuList::parse("1").unwrap()));
    }

    #[test]
    fn offline_cpus_are_refused_with_the_online_list() {
        let online = online().unwrap();
        assert!(online.check_online().is_ok());
        let e = CpuList::parse("1023")
            .unwrap()
            .check_online()
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 1023 that is not online (online: "), "{e}");
    }

    #[test]
    fn a_thread_pinned_reads_back_its_list() {
        let first = CpuList(vec![online().unwrap().cpus()[0]]);
        let seen = std::thread::spawn(move || {
            first.pin_current_thread().unwrap();
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let inner = std::thread::spawn(move || {
                let tid = rustix::thread::gettid().as_raw_nonzero().get();
                of_proc(&format!("self/task/{tid}"))
            })
            .join()
            .unwrap();
            (
                current().unwrap(),
                of_proc(&format!("self/task/{tid}")),
                inner,
                first,
            )
        })
        .join()
        .unwrap();
        assert_eq!(seen.0, seen.3);
        assert_eq!(seen.1.as_ref(), Some(&seen.3));
        // A thread started by a pinned thread inherits its CPUs.
        assert_eq!(seen.2.as_ref(), Some(&seen.3));
    }
}
