//! Logging on stderr: `--log-format`, `-v` and `RUST_LOG`.

use super::LogFormat;

pub fn init(format: LogFormat, verbose: u8) {
    let default = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // hnsw_rs logs every build and dump step at info level.
        .unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new(format!("{default},hnsw_rs=warn,pdf_oxide=warn"))
        });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
