"""One adapter module per environment package, named like it; each defines Taskset, Env, Harness and
load_environment, which the package re-exports for the library's discovery (sv_shared.interop)."""
