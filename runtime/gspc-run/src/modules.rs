//! Checks of the module path before a local run, for what a GPI-Space user easily forgets:
//! building the C++ modules of a net (`<module>` with `<code>`) before running it, building
//! them again after changing their code, and a `--module-path` folder that is not there.
//! Warnings only: the workers still search as usual, and a module call that finds nothing
//! fails with the worker's message.

use std::path::{Path, PathBuf};

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
    let source = if net.ends_with(".xpnet") {
        net.to_string()
    } else {
        bundle
            .files
            .first()
            .map_or_else(|| "NET.xpnet".to_string(), |f| f.path.clone())
    };
    // The C++ the net's modules have now (generated once, when a library is found).
    let mut generated: Option<Vec<pnet_cxx::GeneratedModule>> = None;
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
            let dir = match found(search, &m.name, &m.signature.function) {
                None => None,
                Some(None) => continue,
                Some(Some(dir)) => Some(dir),
            };
            if let Some(dir) = dir {
                let now =
                    generated.get_or_insert_with(|| pnet_cxx::generate(bundle).unwrap_or_default());
                if let Some(now) = now.iter().find(|g| g.name == m.name)
                    && let Some(built) = built_from_other_code(&dir, now)
                {
                    out.push(format!(
                        "{} was built from other C++ code than module `{}` has now ({} \
                         differs): rebuild it with `pnetc {source} --build-modules {}`",
                        dir.join(format!("lib{}.so", m.name)).display(),
                        m.name,
                        built.display(),
                        dir.display(),
                    ));
                }
                continue;
            }
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

/// Where a worker searching `dirs` finds module `m`'s function `f` (as `gspc-worker`
/// looks: `libM.so`, an executable `M.F` or `M`): the folder of `libM.so`, `None` for
/// anything else.
fn found(dirs: &[PathBuf], m: &str, f: &str) -> Option<Option<PathBuf>> {
    dirs.iter().find_map(|d| {
        if d.join(format!("lib{m}.so")).is_file() {
            Some(Some(d.clone()))
        } else if d.join(format!("{m}.{f}")).is_file() || d.join(m).is_file() {
            Some(None)
        } else {
            None
        }
    })
}

/// The source next to the library in `dir` (`pnetc --build-modules DIR` keeps it in
/// `DIR/.pnet-cxx/M.cpp`, `pnetc -g DIR` writes `DIR/M.cpp`) when it is not the code
/// generated now. `#line` directives and spacing are left out of the comparison: the net's
/// path as given and its line numbers change nothing in the library.
fn built_from_other_code(dir: &Path, now: &pnet_cxx::GeneratedModule) -> Option<PathBuf> {
    let (name, text) = now.files.first()?;
    let built = [dir.join(".pnet-cxx").join(name), dir.join(name)]
        .into_iter()
        .find(|p| p.is_file())?;
    let old = std::fs::read_to_string(&built).ok()?;
    let code = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("#line "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|l| !l.is_empty())
            .collect()
    };
    (code(&old) != code(text)).then_some(built)
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
        bundle_of(NET)
    }

    fn bundle_of(text: &str) -> Bundle {
        let out = pnet_sema::compile_source(Path::new("n.xpnet"), text, &Default::default());
        out.bundle.expect("a bundle")
    }

    /// The C++ `pnetc --build-modules` writes for the net `text` (file 0 given as `text`).
    fn cpp_of(text: &str) -> String {
        let b = bundle_of(text);
        let t = text.to_string();
        let modules = pnet_cxx::generate_with_sources(&b, &move |i| (i == 0).then(|| t.clone()));
        modules.expect("generated")[0].files[0].1.clone()
    }

    #[test]
    fn a_library_built_from_other_code_is_named() {
        let dir = std::env::temp_dir().join(format!("gspc-run-stale-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".pnet-cxx")).unwrap();
        std::fs::write(dir.join("libcpp.so"), b"").unwrap();
        let dirs = std::slice::from_ref(&dir);
        let check = |built: &str| {
            std::fs::write(dir.join(".pnet-cxx/cpp.cpp"), built).unwrap();
            warnings(&bundle(), "n.xpnet", dirs, dirs)
        };
        // Built from this code: nothing to say, whatever path and lines `#line` names.
        let now = cpp_of(NET);
        assert_eq!(check(&now), Vec::<String>::new());
        let moved = now.replace("#line 5 \"n.xpnet\"", "#line 9 \"/elsewhere/n.xpnet\"");
        assert_ne!(moved, now);
        assert_eq!(check(&moved), Vec::<String>::new());
        // Built before the code changed.
        let old = cpp_of(&NET.replace("return x;", "return x + 1;"));
        assert_eq!(
            check(&old),
            vec![format!(
                "{} was built from other C++ code than module `cpp` has now ({} differs): \
                 rebuild it with `pnetc n.xpnet --build-modules {}`",
                dir.join("libcpp.so").display(),
                dir.join(".pnet-cxx/cpp.cpp").display(),
                dir.display()
            )]
        );
        let _ = std::fs::remove_dir_all(&dir);
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
