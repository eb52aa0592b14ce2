//! The paths the expansion names the runtime and the macros by, as the crate being compiled depends on
//! them: `::prism_runtime` / `::prism_macros` for a direct dependency (renamed ones too), else through the
//! umbrella crate `prism` (`::prism::runtime`, `::prism::__macros`), so a crate depending on `prism` alone
//! compiles its kernels. Read from the crate's `Cargo.toml` (`CARGO_MANIFEST_DIR`), once per manifest.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use std::collections::HashMap;
use std::sync::Mutex;

/// How the crate being compiled names the Prism crates (local names, `-` already `_`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deps {
    runtime: Option<String>,
    macros: Option<String>,
    umbrella: Option<String>,
}

impl Deps {
    /// The dependency table entries of a manifest: local name → package name.
    pub(crate) fn from_manifest(text: &str) -> Deps {
        let Ok(doc) = text.parse::<toml::Table>() else {
            return Deps::default();
        };
        let mut tables: Vec<&toml::Table> = Vec::new();
        let kinds = ["dependencies", "dev-dependencies", "build-dependencies"];
        for k in kinds {
            tables.extend(doc.get(k).and_then(|t| t.as_table()));
        }
        for target in doc.get("target").and_then(|t| t.as_table()).into_iter() {
            for cfg in target.values().filter_map(|v| v.as_table()) {
                for k in kinds {
                    tables.extend(cfg.get(k).and_then(|t| t.as_table()));
                }
            }
        }
        let mut deps = Deps::default();
        for (key, value) in tables.into_iter().flatten() {
            let package = value.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            let local = Some(key.replace('-', "_"));
            match package {
                "prism-runtime" => deps.runtime = deps.runtime.take().or(local),
                "prism-macros" => deps.macros = deps.macros.take().or(local),
                "prism" => deps.umbrella = deps.umbrella.take().or(local),
                _ => {}
            }
        }
        deps
    }

    /// `::prism_runtime`, or the umbrella's `::prism::runtime` when that is the only way in.
    pub(crate) fn runtime(&self) -> TokenStream {
        match (&self.runtime, &self.umbrella) {
            (Some(r), _) => root(r),
            (None, Some(u)) => {
                let u = root(u);
                quote!(#u::runtime)
            }
            (None, None) => quote!(::prism_runtime),
        }
    }

    /// `::prism_macros`, or the umbrella's hidden `::prism::__macros`.
    pub(crate) fn macros(&self) -> TokenStream {
        match (&self.macros, &self.umbrella) {
            (Some(m), _) => root(m),
            (None, Some(u)) => {
                let u = root(u);
                quote!(#u::__macros)
            }
            (None, None) => quote!(::prism_macros),
        }
    }

    /// The umbrella's local name, when the crate reaches the kernel library only through it
    /// (`prism::kernels::warp_load::<4>(..)`).
    pub(crate) fn umbrella(&self) -> Option<&str> {
        self.umbrella.as_deref()
    }
}

fn root(name: &str) -> TokenStream {
    let i = Ident::new(name, Span::call_site());
    quote!(::#i)
}

/// The crate being compiled's dependencies (rust-analyzer expands many crates in one process: keyed by
/// manifest directory). No manifest (a test of this crate): the direct names.
pub(crate) fn deps() -> Deps {
    static CACHE: Mutex<Option<HashMap<String, Deps>>> = Mutex::new(None);
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return Deps::default();
    };
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .get_or_insert_with(HashMap::new)
        .entry(dir.clone())
        .or_insert_with(|| {
            let path = std::path::Path::new(&dir).join("Cargo.toml");
            std::fs::read_to_string(path)
                .map(|t| Deps::from_manifest(&t))
                .unwrap_or_default()
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: TokenStream) -> String {
        t.to_string().replace(' ', "")
    }

    #[test]
    fn direct_dependencies_win() {
        let d = Deps::from_manifest(
            "[dependencies]\nprism = { path = \"..\" }\nprism-runtime = \"0.1\"\n[dev-dependencies]\nprism-macros = { path = \"m\" }\n",
        );
        assert_eq!(s(d.runtime()), "::prism_runtime");
        assert_eq!(s(d.macros()), "::prism_macros");
    }

    #[test]
    fn umbrella_alone() {
        let d = Deps::from_manifest("[dependencies]\nprism = { path = \"../prism\" }\n");
        assert_eq!(s(d.runtime()), "::prism::runtime");
        assert_eq!(s(d.macros()), "::prism::__macros");
        assert_eq!(d.umbrella(), Some("prism"));
    }

    #[test]
    fn renamed_and_target_specific() {
        let d = Deps::from_manifest(
            "[target.'cfg(unix)'.dependencies]\nrt = { package = \"prism-runtime\", path = \"r\" }\ngpu = { package = \"prism\", path = \"p\" }\n",
        );
        assert_eq!(s(d.runtime()), "::rt");
        assert_eq!(s(d.macros()), "::gpu::__macros");
    }

    #[test]
    fn unreadable_manifest_keeps_the_direct_names() {
        let d = Deps::from_manifest("this is [not toml");
        assert_eq!(s(d.runtime()), "::prism_runtime");
        assert_eq!(s(d.macros()), "::prism_macros");
    }
}
