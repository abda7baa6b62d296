//! The local machine's hardware: core and socket counts and CPU binding, through hwloc (the
//! `hwloc2` crate over the system's libhwloc 2.x), falling back to Linux's
//! `/sys/devices/system/cpu` when hwloc cannot load the topology.
//!
//! Sockets are hwloc *packages* numbered by logical index, as `lstopo` prints `Package L#n`.
//! (hwloc2's NUMA-node count is not used: it panics with libhwloc 2.9, whose NUMA nodes have
//! a special negative depth.) Only the CPUs this process may use (its cgroup/cpuset) count.

use hwloc2::{CpuBindFlags, CpuSet, ObjectType};

/// Physical cores (hwloc `Core` objects); else distinct `(package, core)` pairs in /sys; else
/// [`std::thread::available_parallelism`]; at least 1.
pub fn core_count() -> u32 {
    hwloc_count(ObjectType::Core)
        .or_else(|| sys::cores().map(|c| c.len() as u32))
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get().min(u32::MAX as usize) as u32)
        })
}

/// Sockets (hwloc `Package` objects); else distinct package ids in /sys; at least 1.
pub fn socket_count() -> u32 {
    hwloc_count(ObjectType::Package)
        .or_else(|| sys::packages().map(|p| p.len() as u32))
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// Binds every thread of the current process (and the threads it starts later) to the CPUs of
/// socket `socket` (logical index). Errors name the socket and what exists.
pub fn bind_current_process_to_socket(socket: u32) -> Result<(), String> {
    match hwloc_package_cpus(socket) {
        Some(Ok((mut topology, cpuset))) => topology
            .set_cpubind(cpuset.clone(), CpuBindFlags::CPUBIND_PROCESS)
            .map_err(|e| {
                let hwloc2::CpuBindError::Generic(code, text) = e;
                format!(
                    "cannot bind this process to socket {socket} (CPUs {}): {text} (errno {code})",
                    cpu_list(&bitmap_cpus(&cpuset))
                )
            }),
        Some(Err(e)) => Err(e),
        None => sys::bind_process_to_package(socket),
    }
}

/// The CPUs (OS indexes) of socket `socket`, for diagnostics and tests.
pub fn socket_cpus(socket: u32) -> Result<Vec<u32>, String> {
    match hwloc_package_cpus(socket) {
        Some(Ok((_, cpuset))) => Ok(bitmap_cpus(&cpuset)),
        Some(Err(e)) => Err(e),
        None => sys::package_cpus(socket),
    }
}

/// Objects of type `t` in hwloc's topology; `None` if hwloc cannot load it or has none.
fn hwloc_count(t: ObjectType) -> Option<u32> {
    let topology = hwloc2::Topology::new()?;
    let objects = topology.objects_with_type(&t).ok()?;
    (!objects.is_empty()).then_some(objects.len() as u32)
}

/// hwloc's topology and the cpuset of package `socket`; `None` if hwloc is unusable here.
fn hwloc_package_cpus(socket: u32) -> Option<Result<(hwloc2::Topology, CpuSet), String>> {
    let topology = hwloc2::Topology::new()?;
    let cpuset = {
        let packages = topology.objects_with_type(&ObjectType::Package).ok()?;
        if packages.is_empty() {
            return None;
        }
        match packages.get(socket as usize) {
            None => return Some(Err(no_such_socket(socket, packages.len()))),
            Some(package) => match package.cpuset() {
                // `cpuset()` borrows hwloc's bitmap: take an owned copy
                Some(set) => set.clone(),
                None => return Some(Err(format!("socket {socket} has no CPU set in hwloc"))),
            },
        }
    };
    Some(Ok((topology, cpuset)))
}

fn no_such_socket(socket: u32, count: usize) -> String {
    let has = match count {
        1 => "1 socket (0)".to_string(),
        n => format!("{n} sockets (0 to {})", n - 1),
    };
    format!("socket {socket} does not exist: this machine has {has}")
}

fn bitmap_cpus(set: &CpuSet) -> Vec<u32> {
    set.clone().into_iter().collect()
}

/// `0-3,8` style list.
fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The /sys fallback (Linux).
mod sys {
    use std::collections::{BTreeMap, BTreeSet};

    /// `(cpu, package id, core id)` of the CPUs this process may use.
    fn cpus() -> Option<Vec<(u32, u32, u32)>> {
        let allowed = allowed_cpus();
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/sys/devices/system/cpu").ok()?.flatten() {
            let name = entry.file_name();
            let Some(cpu) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
                continue;
            };
            let Ok(cpu) = cpu.parse::<u32>() else {
                continue;
            };
            if allowed.as_ref().is_some_and(|a| !a.contains(&cpu)) {
                continue;
            }
            let read = |file: &str| -> Option<u32> {
                std::fs::read_to_string(entry.path().join("topology").join(file))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            // offline CPUs have no topology directory
            if let (Some(package), Some(core)) = (read("physical_package_id"), read("core_id")) {
                out.push((cpu, package, core));
            }
        }
        out.sort_unstable();
        (!out.is_empty()).then_some(out)
    }

    /// The CPUs in this process's affinity mask.
    fn allowed_cpus() -> Option<BTreeSet<u32>> {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
        // `size_of::<cpu_set_t>()` bytes into it.
        let set = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return None;
            }
            set
        };
        let max = libc::CPU_SETSIZE as usize;
        // SAFETY: `set` is initialised and `i` is below CPU_SETSIZE.
        Some(
            (0..max)
                .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
                .map(|i| i as u32)
                .collect(),
        )
    }

    /// Package ids → their CPUs, in package id order (= logical index order).
    pub(super) fn packages() -> Option<BTreeMap<u32, Vec<u32>>> {
        let mut map: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (cpu, package, _) in cpus()? {
            map.entry(package).or_default().push(cpu);
        }
        Some(map)
    }

    pub(super) fn cores() -> Option<BTreeSet<(u32, u32)>> {
        Some(
            cpus()?
                .into_iter()
                .map(|(_, package, core)| (package, core))
                .collect(),
        )
    }

    pub(super) fn package_cpus(socket: u32) -> Result<Vec<u32>, String> {
        let packages = packages().ok_or("cannot read the CPU topology from /sys")?;
        packages
            .values()
            .nth(socket as usize)
            .cloned()
            .ok_or_else(|| super::no_such_socket(socket, packages.len()))
    }

    pub(super) fn bind_process_to_package(socket: u32) -> Result<(), String> {
        let cpus = package_cpus(socket)?;
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET is given indexes below
        // CPU_SETSIZE only.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &cpus {
            if (cpu as usize) < libc::CPU_SETSIZE as usize {
                // SAFETY: see above
                unsafe { libc::CPU_SET(cpu as usize, &mut set) };
            }
        }
        let tasks = std::fs::read_dir("/proc/self/task")
            .map_err(|e| format!("cannot list this process's threads: {e}"))?;
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            // SAFETY: `set` is an initialised cpu_set_t of the size passed.
            let rc = unsafe {
                libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
            };
            // a thread may have ended meanwhile (ESRCH)
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ESRCH) {
                    return Err(format!(
                        "cannot bind thread {tid} to socket {socket} (CPUs {}): {e}",
                        super::cpu_list(&cpus)
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Binding tests change the whole process: one at a time.
    static BINDING: Mutex<()> = Mutex::new(());

    /// Runs `f` and restores the process's CPU binding afterwards.
    fn with_saved_binding(f: impl FnOnce()) {
        let _guard = BINDING.lock().unwrap_or_else(|e| e.into_inner());
        let mut topology = hwloc2::Topology::new().expect("hwloc loads the topology");
        let saved = topology
            .get_cpubind(CpuBindFlags::CPUBIND_PROCESS)
            .expect("binding");
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        topology
            .set_cpubind(saved, CpuBindFlags::CPUBIND_PROCESS)
            .expect("restore binding");
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }

    fn current_binding() -> Vec<u32> {
        let topology = hwloc2::Topology::new().expect("hwloc loads the topology");
        bitmap_cpus(
            &topology
                .get_cpubind(CpuBindFlags::CPUBIND_PROCESS)
                .expect("binding"),
        )
    }

    #[test]
    fn counts_are_positive_and_agree_with_sys() {
        let cores = core_count();
        let sockets = socket_count();
        assert!(cores >= 1 && sockets >= 1);
        assert!(sockets <= cores, "{sockets} sockets, {cores} cores");
        assert_eq!(
            hwloc_count(ObjectType::Package),
            Some(sockets),
            "hwloc links and works"
        );
        if let Some(packages) = sys::packages() {
            assert_eq!(packages.len() as u32, sockets);
        }
        if let Some(pairs) = sys::cores() {
            assert_eq!(pairs.len() as u32, cores);
        }
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        assert!(cores <= parallelism, "{cores} cores, {parallelism} CPUs");
    }

    #[test]
    fn binding_to_socket_0_succeeds() {
        with_saved_binding(|| {
            let cpus = socket_cpus(0).expect("socket 0 exists");
            assert!(!cpus.is_empty());
            bind_current_process_to_socket(0).expect("binding to socket 0");
            assert_eq!(current_binding(), cpus);
        });
    }

    #[test]
    fn sys_fallback_binds_too() {
        with_saved_binding(|| {
            let cpus = sys::package_cpus(0).expect("socket 0 in /sys");
            assert_eq!(cpus, socket_cpus(0).expect("socket 0 in hwloc"));
            sys::bind_process_to_package(0).expect("binding to socket 0");
            assert_eq!(current_binding(), cpus);
        });
    }

    #[test]
    fn missing_sockets_are_clear_errors() {
        let sockets = socket_count();
        let error = bind_current_process_to_socket(sockets).expect_err("no such socket");
        assert!(error.starts_with(&format!(
            "socket {sockets} does not exist: this machine has"
        )));
        assert!(error.contains(&sockets.to_string()), "{error}");
        let error = sys::bind_process_to_package(u32::MAX).expect_err("no such socket");
        assert!(error.contains("does not exist"), "{error}");
        assert!(socket_cpus(u32::MAX).is_err());
    }

    #[test]
    fn cpu_lists_are_compact() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpu_list(&[]), "");
        assert_eq!(cpu_list(&[5]), "5");
    }
}
