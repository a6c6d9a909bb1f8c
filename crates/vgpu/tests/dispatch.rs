//! The one dispatch API (`vgpu::dispatch`): backend resolution, the CPU
//! fallback under `auto` and its counting, `gpu` that never falls back.

use vgpu::dispatch::{resolve_backend, Backend, Dispatcher, EnsembleJob};
use vgpu::ir::{compile, Args, Integration};
use vgpu::{ActiveBackend, Error};

fn decay(float: &str) -> vgpu::Kernel {
    compile(
        "decay.field",
        &format!("field decay(k: {float}) {{ state x: {float} = 1.0; d(x)/dt = -k * x; }}"),
    )
    .expect("compile")
}

fn job<'a>(
    k: &'a vgpu::Kernel,
    args: &'a Args,
    integ: &'a Integration,
    b: Backend,
) -> EnsembleJob<'a> {
    EnsembleJob {
        kernel: k,
        args,
        integration: integ,
        backend: b,
        kernel_time: None,
        limits: Default::default(),
    }
}

#[test]
fn explicit_choice_wins_then_the_environment_then_auto() {
    // One test owns VGPU_BACKEND: the others never read it.
    std::env::remove_var("VGPU_BACKEND");
    assert_eq!(resolve_backend(None).unwrap(), Backend::Auto);
    std::env::set_var("VGPU_BACKEND", "cpu");
    assert_eq!(resolve_backend(None).unwrap(), Backend::Cpu);
    assert_eq!(resolve_backend(Some("GPU")).unwrap(), Backend::Gpu);
    std::env::set_var("VGPU_BACKEND", "tpu");
    let e = resolve_backend(None).unwrap_err().to_string();
    assert!(
        e.contains("VGPU_BACKEND") && e.contains("\"tpu\"") && e.contains("cpu, gpu or auto"),
        "{e}"
    );
    std::env::remove_var("VGPU_BACKEND");
    let e = resolve_backend(Some("quantum")).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    assert!(e.to_string().contains("\"quantum\""), "{e}");
}

#[test]
fn auto_runs_f64_on_the_cpu_and_counts_the_fallback() {
    let k = decay("f64");
    let mut args = Args::new(&k);
    args.scalar("k", vgpu::ir::Value::F64(2.0)).unwrap();
    let integ = Integration::new(8, 0.0, 1.0, 1e-3);
    let mut d = Dispatcher::new();
    let run = d.ensemble(&job(&k, &args, &integ, Backend::Auto)).unwrap();
    assert_eq!(run.backend, ActiveBackend::Cpu);
    let why = run.fallback.expect("the reason of the fallback");
    assert!(why.contains("f64"), "{why}");
    assert_eq!(d.cpu_fallbacks(), 1);
    let x = run.states.get(0).as_f64();
    assert!((x - (-2.0f64).exp()).abs() < 1e-9, "{x}");
    // Asked for the CPU: no fallback, nothing counted.
    let run = d.ensemble(&job(&k, &args, &integ, Backend::Cpu)).unwrap();
    assert!(run.fallback.is_none());
    assert_eq!(d.cpu_fallbacks(), 1);
}

#[test]
fn gpu_never_falls_back() {
    let k = decay("f64");
    let mut args = Args::new(&k);
    args.scalar("k", vgpu::ir::Value::F64(2.0)).unwrap();
    let integ = Integration::new(8, 0.0, 1.0, 1e-3);
    let mut d = Dispatcher::new();
    let e = d
        .ensemble(&job(&k, &args, &integ, Backend::Gpu))
        .unwrap_err();
    assert!(matches!(e, Error::Ir(_)), "{e:?}");
    assert!(e.to_string().contains("f64"), "{e}");
    assert_eq!(d.cpu_fallbacks(), 0);
}

#[test]
fn kernel_faults_are_errors_on_every_backend() {
    // A state that blows up is the kernel's fault: auto does not hide it on the CPU.
    let k = decay("f32");
    let mut args = Args::new(&k);
    args.scalar("k", vgpu::ir::Value::F32(-1e30)).unwrap();
    let integ = Integration::new(4, 0.0, 1.0, 0.1);
    for b in [Backend::Auto, Backend::Cpu] {
        let mut d = Dispatcher::new();
        let e = d.ensemble(&job(&k, &args, &integ, b)).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("state `x` of trajectory 0 is inf"), "{b}: {e}");
        assert_eq!(d.cpu_fallbacks(), 0, "{b}");
    }
}

#[test]
fn f32_runs_on_the_gpu_when_there_is_one() {
    let k = decay("f32");
    let mut args = Args::new(&k);
    args.scalar("k", vgpu::ir::Value::F32(1.0)).unwrap();
    let integ = Integration::new(64, 0.0, 1.0, 1e-2);
    let mut d = Dispatcher::new();
    match d.ensemble(&job(&k, &args, &integ, Backend::Gpu)) {
        Ok(run) => {
            assert_eq!(run.backend, ActiveBackend::Gpu);
            assert!(run.fallback.is_none());
            let x = run.states.get(63).as_f64();
            assert!((x - (-1.0f64).exp()).abs() < 1e-5, "{x}");
        }
        Err(Error::Gpu(e)) if std::env::var_os("VGPU_REQUIRE_GPU").is_none() => {
            eprintln!("no GPU adapter, skipped: {e}");
        }
        Err(e) => panic!("{e}"),
    }
}
