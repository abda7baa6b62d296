//! `gspc-run --monitor`: the live web page of the run (`pnet_monitor`), fed by the job's
//! control socket: the one of `--control`, else a private one made for the monitor alone
//! (the monitor then tells the job at once that no client will put tokens, so the job ends
//! as it would have without a control socket).

use std::path::PathBuf;

/// The monitor of a run; dropping it stops it and removes its private socket's folder.
pub struct Watch {
    monitor: pnet_monitor::Monitor,
    own_dir: Option<PathBuf>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(d) = &self.own_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Starts the monitor of the run of `net` on `control` (made when None) and prints its URL
/// on stderr.
pub fn start(control: &mut Option<PathBuf>, net: &str) -> Result<Watch, String> {
    let (source, own_dir) = match control {
        Some(socket) => (pnet_monitor::JobSource::new(socket).net(net), None),
        None => {
            use std::os::unix::fs::DirBuilderExt;
            let dir = std::env::temp_dir().join(format!(
                "gspc-run-monitor-{}-{}",
                std::process::id(),
                pnet_monitor::random_token()
            ));
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
            let socket = dir.join("control.sock");
            *control = Some(socket.clone());
            (
                pnet_monitor::JobSource::closing(&socket).net(net),
                Some(dir),
            )
        }
    };
    let watch = match pnet_monitor::start(Box::new(source), pnet_monitor::Options::default()) {
        Ok(m) => Watch {
            monitor: m,
            own_dir,
        },
        Err(e) => {
            if let Some(d) = &own_dir {
                let _ = std::fs::remove_dir_all(d);
            }
            return Err(format!("cannot serve the monitor on 127.0.0.1: {e}"));
        }
    };
    pnet_stdlib::errln!("gspc-run: monitor: {}", watch.monitor.url());
    Ok(watch)
}
