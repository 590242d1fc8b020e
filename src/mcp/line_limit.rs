//! The limit on one request line of `git loaf mcp`, answered rather than ignored.
//!
//! rmcp reads a line of at most 16 MiB and silently drops a longer one: the client, waiting
//! for the answer to that request, would wait forever. Here stdin is read through
//! [`LineLimit`], which hands rmcp only lines within [`MAX_LINE_BYTES`] (a longer one is
//! never held whole: it is dropped as it arrives, up to its newline), and [`Limited`], the
//! transport the server runs on, answers each dropped line with a JSON-RPC error naming the
//! limit, under the request's id when its first bytes hold one. The server then goes on
//! with the next line.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use rmcp::RoleServer;
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// The longest request line served, its newline included: 16 MiB, as rmcp reads.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Bytes of a dropped line kept to find its id in (`{"jsonrpc":"2.0","id":…` comes first
/// as clients write it).
const HEAD_BYTES: usize = 4096;

/// The server's transport: rmcp's, on stdin read through [`LineLimit`], answering the lines
/// it dropped.
pub(super) struct Limited<R: AsyncRead + Unpin, W: AsyncWrite> {
    inner: AsyncRwTransport<RoleServer, LineLimit<R>, W>,
    dropped: mpsc::UnboundedReceiver<Option<RequestId>>,
}

impl<R, W> Limited<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Requests read from `read`, answers written to `write`.
    pub(super) fn new(read: R, write: W) -> Limited<R, W> {
        let (tx, dropped) = mpsc::unbounded_channel();
        let reader = LineLimit::new(read, MAX_LINE_BYTES, tx);
        // Every line it gets is within the limit already.
        let inner = AsyncRwTransport::new_server(reader, write).with_max_line_length(usize::MAX);
        Limited { inner, dropped }
    }
}

impl<R, W> Transport<RoleServer> for Limited<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            tokio::select! {
                biased;
                Some(id) = self.dropped.recv() => {
                    if self.inner.send(too_long(id)).await.is_err() {
                        return None;
                    }
                }
                // rmcp's read keeps a partial line across cancellation.
                message = self.inner.receive() => return message,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// The answer to a line past the limit.
fn too_long(id: Option<RequestId>) -> TxJsonRpcMessage<RoleServer> {
    let message = format!(
        "request line longer than {} MiB ({MAX_LINE_BYTES} bytes), the most `git loaf mcp` reads: \
         it was not read; send less in one request (split the reply into several applies)",
        MAX_LINE_BYTES / (1024 * 1024)
    );
    let data = serde_json::json!({ "max_line_bytes": MAX_LINE_BYTES });
    TxJsonRpcMessage::<RoleServer>::error(
        ErrorData::new(ErrorCode::INVALID_REQUEST, message, Some(data)),
        id,
    )
}

/// A reader that passes on whole lines of at most `limit` bytes and drops longer ones,
/// telling `dropped` each time (with the line's id when its head shows one).
pub(super) struct LineLimit<R> {
    inner: R,
    limit: usize,
    dropped: mpsc::UnboundedSender<Option<RequestId>>,
    /// Bytes read and not yet looked at.
    chunk: Box<[u8]>,
    chunk_at: usize,
    chunk_end: usize,
    /// The line being read, within the limit so far.
    line: Vec<u8>,
    /// A whole line (or the last bytes before end of file), being handed on.
    ready: Vec<u8>,
    ready_at: usize,
    /// The start of a line past the limit, whose rest is being dropped.
    dropping: Option<Vec<u8>>,
}

impl<R> LineLimit<R> {
    pub(super) fn new(
        inner: R,
        limit: usize,
        dropped: mpsc::UnboundedSender<Option<RequestId>>,
    ) -> LineLimit<R> {
        LineLimit {
            inner,
            limit,
            dropped,
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            chunk_at: 0,
            chunk_end: 0,
            line: Vec::new(),
            ready: Vec::new(),
            ready_at: 0,
            dropping: None,
        }
    }

    /// Looks at the unread bytes of the chunk up to the next newline.
    fn take_from_chunk(&mut self) {
        let unread = &self.chunk[self.chunk_at..self.chunk_end];
        let newline = unread.iter().position(|&b| b == b'\n');
        let take = newline.map_or(unread.len(), |at| at + 1);
        let piece = &unread[..take];
        if let Some(head) = &mut self.dropping {
            let room = HEAD_BYTES.saturating_sub(head.len()).min(piece.len());
            head.extend_from_slice(&piece[..room]);
        } else if self.line.len() + take > self.limit {
            let mut head = std::mem::take(&mut self.line);
            head.truncate(HEAD_BYTES);
            let room = HEAD_BYTES.saturating_sub(head.len()).min(piece.len());
            head.extend_from_slice(&piece[..room]);
            self.dropping = Some(head);
        } else {
            self.line.extend_from_slice(piece);
            if newline.is_some() {
                self.ready = std::mem::take(&mut self.line);
                self.ready_at = 0;
            }
        }
        if newline.is_some()
            && let Some(head) = self.dropping.take()
        {
            // The server may be gone; then nobody waits for the answer either.
            let _ = self.dropped.send(request_id(&head));
        }
        self.chunk_at += take;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineLimit<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.ready_at < this.ready.len() {
                let n = out.remaining().min(this.ready.len() - this.ready_at);
                out.put_slice(&this.ready[this.ready_at..this.ready_at + n]);
                this.ready_at += n;
                return Poll::Ready(Ok(()));
            }
            if this.chunk_at < this.chunk_end {
                this.take_from_chunk();
                continue;
            }
            let mut buf = ReadBuf::new(&mut this.chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf))?;
            let got = buf.filled().len();
            this.chunk_at = 0;
            this.chunk_end = got;
            if got == 0 {
                // End of input: what is left of a line within the limit goes on (rmcp
                // drops a last line without its newline), then the end.
                if this.line.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                this.ready = std::mem::take(&mut this.line);
                this.ready_at = 0;
            }
        }
    }
}

/// The `id` of a JSON-RPC message from its first bytes: the value of the top-level `"id"`
/// key, when it comes before the bytes end (as clients write it: before `params`).
fn request_id(head: &[u8]) -> Option<RequestId> {
    let mut depth = 0usize;
    let mut at = 0;
    while at < head.len() {
        match head[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(head, at)?;
                let key = &head[at..=end];
                at = end;
                if depth == 1 && key == b"\"id\"" {
                    let rest = head[end + 1..].trim_ascii_start().strip_prefix(b":")?;
                    let value = serde_json::Deserializer::from_slice(rest)
                        .into_iter::<Value>()
                        .next()?
                        .ok()?;
                    return serde_json::from_value(value).ok();
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// Where the string starting at `start` (its opening quote) ends (its closing quote).
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt as _;

    #[test]
    fn the_id_is_read_from_the_top_level_only() {
        let number = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#;
        assert_eq!(request_id(number), Some(RequestId::Number(7)));
        let text = br#"{"params":{"id":1,"s":"\"id\":"},"id" : "a-1","#;
        assert_eq!(request_id(text), Some(RequestId::String("a-1".into())));
        let cut = br#"{"jsonrpc":"2.0","method":"x","params":{"id":3,"data":"aaaa"#;
        assert_eq!(request_id(cut), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_line_past_the_limit_is_dropped_and_reported_and_the_next_one_passes() {
        let input = format!(
            "{{\"id\":1}}\n{{\"id\":2,\"pad\":\"{}\"}}\n{{\"id\":3}}\n",
            "x".repeat(100)
        );
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut reader = LineLimit::new(input.as_bytes(), 20, tx);
        reader.chunk = vec![0; 7].into_boxed_slice();
        let mut passed = String::new();
        reader
            .read_to_string(&mut passed)
            .await
            .expect("reads to the end");
        assert_eq!(passed, "{\"id\":1}\n{\"id\":3}\n");
        assert_eq!(rx.recv().await, Some(Some(RequestId::Number(2))));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_limit_counts_the_newline() {
        let fits = format!("{}\n", "a".repeat(19));
        let past = format!("{}\n", "b".repeat(20));
        let input = format!("{fits}{past}");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut reader = LineLimit::new(input.as_bytes(), 20, tx);
        let mut passed = String::new();
        reader
            .read_to_string(&mut passed)
            .await
            .expect("reads to the end");
        assert_eq!(passed, fits);
        assert_eq!(rx.recv().await, Some(None), "no id in it");
    }
}
