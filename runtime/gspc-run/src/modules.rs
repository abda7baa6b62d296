//! Checks of the module path before a local run, for what a GPI-Space user easily forgets:
//! building the C++ modules of a net (`<module>` with `<code>`) before running it, and a
//! `--module-path` folder that is not there. Warnings only: the workers still search as
//! usual, and a module call that finds nothing fails with the worker's message.

use std::path::PathBuf;

use pnet_bundle::{Body, Bundle};

/// The warnings (without the `gspc-run: warning: ` prefix) for `bundle` run with the module
/// folders `given` (`--module-path`) and `search` (everything the workers search, in order,
/// `$PNET_MODULE_PATH` included). `net` is the net as the user named it.
pub(crate) fn warnings(
    bundle: &Bundle,
    net: &str,
    given: &[PathBuf],
    search: &[PathBuf],
) -> Vec<String> {
    let mut out = Vec::new();
    for dir in given {
        if !dir.is_dir() {
            out.push(format!("--module-path {}: no such folder", dir.display()));
        }
    }
    // One warning per module with code, at its first function.
    let mut seen: Vec<&str> = Vec::new();
    for f in &bundle.functions {
        let modules = match &f.body {
            Body::Module(m) => std::slice::from_ref(m),
            Body::Modules { modules, .. } => modules.as_slice(),
            _ => continue,
        };
        for m in modules {
            if m.code.is_none() || seen.contains(&m.name.as_str()) {
                continue;
            }
            seen.push(&m.name);
            if found(search, &m.name, &m.signature.function) {
                continue;
            }
            let source = if net.ends_with(".xpnet") {
                net.to_string()
            } else {
                bundle
                    .files
                    .first()
                    .map_or_else(|| "NET.xpnet".to_string(), |f| f.path.clone())
            };
            out.push(format!(
                "module `{}` has C++ code ({}) but no lib{}.so is on the module path: build \
                 it with `pnetc {source} --build-modules DIR` and run with `--module-path DIR`",
                m.name,
                bundle.location(m.span),
                m.name,
            ));
        }
    }
    out
}

/// Whether a worker searching `dirs` would find module `m`'s function `f` (as
/// `gspc-worker` looks: `libM.so`, an executable `M.F` or `M`).
fn found(dirs: &[PathBuf], m: &str, f: &str) -> bool {
    dirs.iter().any(|d| {
        d.join(format!("lib{m}.so")).is_file()
            || d.join(format!("{m}.{f}")).is_file()
            || d.join(m).is_file()
    })
}

/// The folders of `$PNET_MODULE_PATH`, which the workers search last.
pub(crate) fn env_path() -> Vec<PathBuf> {
    std::env::var_os("PNET_MODULE_PATH")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const NET: &str = r#"<defun name="n">
  <in name="x" type="long"/>
  <out name="r" type="long"/>
  <module name="cpp" function="r f (x)">
    <code><![CDATA[ return x; ]]></code>
  </module>
</defun>
"#;

    fn bundle() -> Bundle {
        let out = pnet_sema::compile_source(Path::new("n.xpnet"), NET, &Default::default());
        out.bundle.expect("a bundle")
    }

    #[test]
    fn a_module_with_code_missing_from_the_path_and_a_missing_folder_are_named() {
        let dir = std::env::temp_dir().join(format!("gspc-run-modules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("nowhere");
        let w = warnings(
            &bundle(),
            "n.xpnet",
            std::slice::from_ref(&missing),
            &[missing.clone(), dir.clone()],
        );
        assert_eq!(
            w,
            vec![
                format!("--module-path {}: no such folder", missing.display()),
                "module `cpp` has C++ code (n.xpnet:4:3) but no libcpp.so is on the module \
                 path: build it with `pnetc n.xpnet --build-modules DIR` and run with \
                 `--module-path DIR`"
                    .to_string(),
            ]
        );
        // Built: nothing to say.
        std::fs::write(dir.join("libcpp.so"), b"").unwrap();
        let dirs = std::slice::from_ref(&dir);
        assert!(warnings(&bundle(), "n.xpnet", dirs, dirs).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
