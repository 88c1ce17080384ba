//! The ampbench command. All work is in the library; this prints the error
//! chain on one line and sets the exit code: 2 for bad input, 1 otherwise.

/// mimalloc: the client's measured path allocates per row and per
/// statement inside the SQL drivers; glibc's malloc spent a fifth of the
/// LinkBench client's CPU there (profiled), mimalloc less.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let code = match ampbench::cli::main() {
        Ok(code) => code,
        Err(e) => {
            let usage = e
                .chain()
                .any(|c| c.downcast_ref::<ampbench::UsageError>().is_some());
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("ampbench: error: {}", msg.join(": ").replace('\n', " "));
            if usage { 2 } else { 1 }
        }
    };
    std::process::exit(code);
}
