//! The worker plan from `--topology` and `--nodefile`, with their diagnostics rendered like
//! the compiler's (codespan-reporting), and the launcher from `--launcher`.

use std::path::Path;
use std::process::ExitCode;

use pnet_diagnostics::render::render_to_stderr;
use pnet_diagnostics::{ColorMode, Diagnostic, RenderFile};
use pnet_launch::Launcher;
use pnet_topology::Plan;

use crate::usage_error;

/// Renders topology or nodefile diagnostics against their text, named `origin`.
fn render(origin: &str, text: &str, diagnostics: &[Diagnostic]) {
    let file = RenderFile { name: origin, text };
    render_to_stderr(&[file], diagnostics, ColorMode::Auto);
}

/// Parses the topology (default: one worker per core, each with `default_shm` bytes of
/// working memory) and the nodefile (default: this host), checks them, and expands them into
/// a plan. Errors are usage errors (exit code 2).
pub fn plan(
    topology: Option<&str>,
    nodefile: Option<&Path>,
    launcher: &str,
    default_shm: u64,
) -> Result<Plan, ExitCode> {
    let (topo, text) = match topology {
        Some(t) => {
            let (topo, diags) = pnet_topology::parse_topology(t);
            if !diags.is_empty() {
                render("--topology", t, &diags);
            }
            if pnet_topology::has_errors(&diags) {
                return Err(usage_error("the topology has errors"));
            }
            (topo, t.to_string())
        }
        None => {
            let topo = pnet_topology::default_topology_with_memory(
                pnet_topology::hwloc::core_count(),
                default_shm,
            );
            let text = topo.to_string();
            (topo, text)
        }
    };
    let hosts = match nodefile {
        Some(path) => {
            let content = pnet_stdlib::input::read_text(path, pnet_stdlib::input::MAX_SOURCE_BYTES)
                .map_err(|e| {
                    usage_error(&format!("cannot read the nodefile {}: {e}", path.display()))
                })?;
            let (hosts, diags) = pnet_topology::parse_nodefile(&content);
            let origin = path.display().to_string();
            if !diags.is_empty() {
                render(&origin, &content, &diags);
            }
            if pnet_topology::has_errors(&diags) {
                return Err(usage_error("the nodefile has errors"));
            }
            hosts
        }
        None => vec![pnet_topology::local_hostname()],
    };
    let mut checks = pnet_topology::check_worker_count(&topo, hosts.len());
    if launcher == "local" {
        checks.extend(pnet_topology::check_local_sockets(&topo));
    }
    if !checks.is_empty() {
        render("--topology", &text, &checks);
    }
    if pnet_topology::has_errors(&checks) {
        return Err(usage_error("the topology does not fit"));
    }
    Ok(pnet_topology::plan(&topo, &hosts))
}

/// The launcher named by `--launcher`, with the `--ssh-option`s.
pub fn launcher(name: &str, ssh_options: &[String]) -> Result<Launcher, ExitCode> {
    let mut l = Launcher::parse(name).map_err(|e| usage_error(&format!("--launcher: {e}")))?;
    if let Launcher::Ssh(opts) = &mut l {
        opts.args.extend(ssh_options.iter().cloned());
    } else if !ssh_options.is_empty() {
        return Err(usage_error("--ssh-option needs --launcher ssh"));
    }
    Ok(l)
}
