//! How a failed command's error is told apart and printed.

/// Whether `error` comes from writing to a pipe whose reader is gone.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes joined by ": ", leaving out a cause that its
/// parent's message already spells out (library errors name their path and
/// their source in one message, and also return that source).
pub fn error_chain(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_its_parents_message_is_printed_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("data/x.json: {source}")]
        struct Read {
            #[source]
            source: std::io::Error,
        }
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = anyhow::Error::new(Read { source: io }).context("reading squad:x");
        assert_eq!(
            error_chain(&error),
            "reading squad:x: data/x.json: no such file"
        );
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_chain(&plain), "outer: inner");
    }
}
