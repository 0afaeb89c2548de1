//! The inspect Tool in Rust, against `brain:inspect/inspect` (examples/inspect/wit).
//! It reads the workspace through the world's own `wasi:filesystem` imports, not
//! `std::fs`, so the Component imports nothing a Brain Component Worker lacks.
//!
//!   rustup target add wasm32-wasip2
//!   cargo build --release --target wasm32-wasip2
//!   # -> target/wasm32-wasip2/release/inspect.wasm
use serde::Deserialize;
use serde_json::json;

wit_bindgen::generate!({ path: "../wit", world: "inspect", generate_all });

use brain::tool::host;
use exports::brain::tool::tool::{Guest, Invocation};
use wasi::filesystem::preopens::get_directories;
use wasi::filesystem::types::{Descriptor, DescriptorFlags, DescriptorType, OpenFlags, PathFlags};

#[derive(Deserialize)]
struct Input {
    path: String,
}

#[derive(Deserialize)]
struct Options {
    depth: u32,
}

struct Inspect;

impl Guest for Inspect {
    fn run(invocation: Invocation) -> Result<(), String> {
        let input: Input = serde_json::from_str(&invocation.input).map_err(|e| e.to_string())?;
        let options: Options = serde_json::from_str(&invocation.options).map_err(|e| e.to_string())?;
        let sequence = host::emit("inspect_started", &invocation.input).map_err(|r| r.code)?;
        let outcome = match list_path(&input.path, options.depth) {
            Ok(entries) => json!({ "status": "ok", "value": { "eventSequence": sequence, "entries": entries } }),
            Err(code) => json!({
                "status": "error",
                "error": { "code": "fs_error", "message": "the workspace refused the path", "details": { "errno": code as u8 } }
            }),
        };
        host::finish(Some(&outcome.to_string()), None).map_err(|r| r.code)?;
        Ok(())
    }
}

fn list_path(path: &str, depth: u32) -> Result<Vec<String>, wasi::filesystem::types::ErrorCode> {
    let (root, _) = get_directories().into_iter().next().expect("a preopened workspace");
    let dir = root.open_at(PathFlags::SYMLINK_FOLLOW, path, OpenFlags::DIRECTORY, DescriptorFlags::READ)?;
    let mut entries = Vec::new();
    list(&dir, "", depth, &mut entries)?;
    Ok(entries)
}

fn list(dir: &Descriptor, prefix: &str, depth: u32, out: &mut Vec<String>) -> Result<(), wasi::filesystem::types::ErrorCode> {
    let stream = dir.read_directory()?;
    while let Some(entry) = stream.read_directory_entry()? {
        let is_dir = entry.type_ == DescriptorType::Directory;
        let name = format!("{prefix}{}", entry.name);
        out.push(if is_dir { format!("{name}/") } else { name.clone() });
        if is_dir && depth > 1 {
            let child = dir.open_at(PathFlags::empty(), &entry.name, OpenFlags::DIRECTORY, DescriptorFlags::READ)?;
            list(&child, &format!("{name}/"), depth - 1, out)?;
        }
    }
    Ok(())
}

export!(Inspect);
