//! `PRISM_BACKEND` overrides `Device::auto()`. One test in its own binary, since it sets the environment.

use prism_runtime::{Backend, Device, RuntimeError, BACKEND_ENV};

#[test]
fn prism_backend_overrides_auto() {
    std::env::set_var(BACKEND_ENV, "emulator");
    assert_eq!(Device::auto().unwrap().backend(), Backend::Emulator);
    std::env::set_var(BACKEND_ENV, "gpu");
    match Device::auto() {
        Ok(d) => assert_eq!(d.backend(), Backend::Gpu),
        Err(e) => assert!(matches!(e, RuntimeError::NoGpu(_)), "{}", e),
    }
    std::env::set_var(BACKEND_ENV, "auto");
    let d = Device::auto().unwrap();
    assert_eq!(d.backend() == Backend::Gpu, Device::gpu(0).is_ok());
    // Any case; a typo is an error, not a silent "automatic".
    std::env::set_var(BACKEND_ENV, "Emulator");
    assert_eq!(Device::auto().unwrap().backend(), Backend::Emulator);
    std::env::set_var(BACKEND_ENV, "gpuu");
    match Device::auto() {
        Err(RuntimeError::BadArgs(m)) => assert!(m.contains("gpuu"), "{m}"),
        other => panic!("expected BadArgs, got {:?}", other.map(|d| d.name())),
    }
    std::env::remove_var(BACKEND_ENV);
}
