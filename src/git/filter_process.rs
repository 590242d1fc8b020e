//! Filter drivers as git runs them (`filter.<name>.clean`/`smudge`/`process`): a shell
//! command run with `sh -c` in a working tree of the repository (`%f` is the quoted path), or
//! a long-running process speaking git's filter protocol version 2 (pkt-lines), started at
//! most once per driver and kept for every later file. As in git, a failing driver passes the
//! content through with a warning, unless `filter.<name>.required` is set: then the
//! conversion is an error naming the path.
//!
//! Drivers are read from the config once per process (a git-loaf run is one operation) and
//! long-running filters live until [`finish`]. Which paths a driver applies to is the
//! `filter` attribute ([`has_driver`]); the other conversions are [`super::filters`]'.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, LazyLock, Mutex};

use git2::{AttrCheckFlags, AttrValue, Repository};

/// A conversion that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// A driver marked `filter.<name>.required` failed or is missing.
    #[error("{}: {direction} filter '{driver}' failed: {reason}", .path.display())]
    Required {
        /// The file being converted.
        path: PathBuf,
        /// `clean` or `smudge`.
        direction: &'static str,
        /// The driver's name.
        driver: String,
        /// What went wrong.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// git failed.
    #[error("{}", super::words::plain(.0))]
    Git(#[from] git2::Error),
}

impl From<FilterError> for git2::Error {
    fn from(error: FilterError) -> git2::Error {
        match error {
            FilterError::Git(e) => e,
            other => git2::Error::from_str(&other.to_string()),
        }
    }
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FilterError + '_ {
    move |source| FilterError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Which way content goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// Working tree → object database.
    Clean,
    /// Object database → working tree.
    Smudge,
}

impl Direction {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Direction::Clean => "clean",
            Direction::Smudge => "smudge",
        }
    }
}

/// `filter.<name>.*` from the config.
#[derive(Debug, Default, Clone)]
struct Driver {
    clean: Option<String>,
    smudge: Option<String>,
    process: Option<String>,
    required: bool,
}

/// The drivers of one repository and the long-running filters started for it.
pub(crate) struct Drivers {
    /// Where commands run.
    cwd: PathBuf,
    by_name: HashMap<String, Driver>,
    /// Long-running filters by driver name; `Err` once one failed to start or broke, so it
    /// is not started again for every file.
    running: HashMap<String, Result<LongRunning, String>>,
}

/// Drivers by common git dir (`None`: the repository configures none).
type Registry = HashMap<PathBuf, Option<Arc<Mutex<Drivers>>>>;

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The drivers `repo` configures, read once; `None` when it configures none (the fast path:
/// nothing else is looked up).
pub(crate) fn drivers(repo: &Repository) -> Result<Option<Arc<Mutex<Drivers>>>, git2::Error> {
    let key = repo.commondir().to_path_buf();
    let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = registry.get(&key) {
        return Ok(found.clone());
    }
    let by_name = read_drivers(repo)?;
    let found = (!by_name.is_empty()).then(|| {
        Arc::new(Mutex::new(Drivers {
            cwd: command_dir(repo),
            by_name,
            running: HashMap::new(),
        }))
    });
    registry.insert(key, found.clone());
    Ok(found)
}

/// Where driver commands run: the repository's working tree, except for a working tree
/// inside the git dir (the stage), whose commands run in the main working tree, as for the
/// user's own `git add`: tools such as git-crypt look for their keys in the git dir of the
/// folder they run in.
fn command_dir(repo: &Repository) -> PathBuf {
    let common = repo.commondir();
    match repo.workdir() {
        Some(dir) if dir.starts_with(common) => common
            .parent()
            .filter(|p| common.file_name().is_some_and(|n| n == ".git") && p.is_dir())
            .unwrap_or(dir)
            .to_path_buf(),
        Some(dir) => dir.to_path_buf(),
        None => common.to_path_buf(),
    }
}

fn read_drivers(repo: &Repository) -> Result<HashMap<String, Driver>, git2::Error> {
    let config = repo.config()?.snapshot()?;
    let mut by_name: HashMap<String, Driver> = HashMap::new();
    let mut entries = config.entries(Some(r"^filter\..*\.(clean|smudge|process|required)$"))?;
    // Not an Iterator: each entry borrows the iterator until the next call.
    #[allow(clippy::while_let_on_iterator)]
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let Ok(name) = entry.name() else { continue };
        let Some(rest) = name.strip_prefix("filter.") else {
            continue;
        };
        let Some((driver, key)) = rest.rsplit_once('.') else {
            continue;
        };
        let value = entry.value().ok().map(str::to_owned);
        let slot = by_name.entry(driver.to_owned()).or_default();
        match key {
            "clean" => slot.clean = value,
            "smudge" => slot.smudge = value,
            "process" => slot.process = value,
            "required" => {
                slot.required = config.get_bool(name).unwrap_or(false);
            }
            _ => {}
        }
    }
    Ok(by_name)
}

/// Drops every driver read and stops the long-running filters, waiting for them as git does
/// when a command ends. The next conversion reads the config again.
pub fn finish() {
    let drained: Vec<_> = {
        let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        registry.drain().collect()
    };
    for drivers in drained.into_iter().filter_map(|(_, d)| d) {
        let mut drivers = drivers.lock().unwrap_or_else(|e| e.into_inner());
        for (_, running) in drivers.running.drain() {
            if let Ok(process) = running {
                process.stop();
            }
        }
    }
}

/// The driver `path` names through its `filter` attribute, if one is configured.
fn driver_for(
    repo: &Repository,
    drivers: &Drivers,
    path: &Path,
) -> Result<Option<(String, Driver)>, git2::Error> {
    let value = repo.get_attr_bytes(path, "filter", AttrCheckFlags::FILE_THEN_INDEX)?;
    let name = match AttrValue::from_bytes(value) {
        AttrValue::String(name) => name.as_bytes(),
        AttrValue::Bytes(name) => name,
        _ => return Ok(None),
    };
    let name = String::from_utf8_lossy(name).into_owned();
    Ok(drivers
        .by_name
        .get(&name)
        .map(|driver| (name, driver.clone())))
}

/// Whether `path` has a configured driver in `repo` (cheap when no driver is configured).
pub(crate) fn has_driver(repo: &Repository, path: &Path) -> Result<bool, git2::Error> {
    let Some(drivers) = drivers(repo)? else {
        return Ok(false);
    };
    let drivers = drivers.lock().unwrap_or_else(|e| e.into_inner());
    Ok(driver_for(repo, &drivers, path)?.is_some())
}

/// Runs `path`'s driver (if any) over `content` in `direction`; the content unchanged when
/// there is none or a non-required one fails.
pub(crate) fn run_driver(
    repo: &Repository,
    path: &Path,
    content: Vec<u8>,
    direction: Direction,
) -> Result<Vec<u8>, FilterError> {
    let Some(drivers) = drivers(repo)? else {
        return Ok(content);
    };
    let mut drivers = drivers.lock().unwrap_or_else(|e| e.into_inner());
    let Some((name, driver)) = driver_for(repo, &drivers, path)? else {
        return Ok(content);
    };
    let command = match direction {
        Direction::Clean => driver.clean.as_deref(),
        Direction::Smudge => driver.smudge.as_deref(),
    }
    .filter(|c| !c.is_empty());
    // As in git: a command for the direction wins over `process` only when no process is
    // configured.
    let outcome = match (&driver.process, command) {
        (Some(process), _) if !process.is_empty() => {
            let cwd = drivers.cwd.clone();
            let slot = drivers
                .running
                .entry(name.clone())
                .or_insert_with(|| LongRunning::start(process, &cwd));
            match slot {
                Ok(filter) => {
                    let result = filter.convert(direction, path, &content);
                    if let Err(Failure::Broken(reason)) = &result {
                        *slot = Err(reason.clone());
                    }
                    result.map_err(Failure::into_reason)
                }
                Err(reason) => Err(reason.clone()),
            }
        }
        (_, Some(command)) => run_command(command, path, &drivers.cwd, &content),
        _ => Err(format!("no {} command is configured", direction.name())),
    };
    match outcome {
        Ok(converted) => Ok(converted),
        Err(reason) if driver.required => Err(FilterError::Required {
            path: path.to_path_buf(),
            direction: direction.name(),
            driver: name,
            reason,
        }),
        Err(reason) => {
            // git warns and goes on with the content unconverted; a missing command for
            // this direction is simply no conversion.
            if driver.process.is_some() || command.is_some() {
                tracing::warn!(
                    "{}: {} filter '{name}' failed ({reason}); content used as is",
                    path.display(),
                    direction.name()
                );
            }
            Ok(content)
        }
    }
}

/// `path` quoted for `sh` as git quotes `%f`.
fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '!' => out.push_str("'\\!'"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `command` with `%f` (the quoted path) and `%%` expanded, as git expands it.
fn expand(command: &str, path: &Path) -> String {
    let mut out = String::with_capacity(command.len());
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('f') => {
                chars.next();
                out.push_str(&shell_quote(path));
            }
            Some('%') => {
                chars.next();
                out.push('%');
            }
            _ => out.push('%'),
        }
    }
    out
}

/// A one-shot driver command: `content` on stdin, the converted content on stdout.
fn run_command(command: &str, path: &Path, cwd: &Path, content: &[u8]) -> Result<Vec<u8>, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(expand(command, path))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run '{command}': {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    // Written from another thread while stdout is read, or a filter that writes before it
    // has read everything would block on a full pipe.
    let output = std::thread::scope(|scope| {
        let writer = scope.spawn(move || stdin.write_all(content));
        let mut output = Vec::new();
        let read = stdout.read_to_end(&mut output);
        // A filter may exit without reading everything (`true`): not an error by itself.
        let _ = writer.join();
        read.map(|_| output)
    })
    .map_err(|e| format!("reading its output: {e}"))?;
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("'{command}' exited with {status}"));
    }
    Ok(output)
}

/// The largest payload of one pkt-line (git's `LARGE_PACKET_DATA_MAX`).
const PKT_MAX: usize = 65516;

fn write_pkt(out: &mut impl Write, data: &[u8]) -> std::io::Result<()> {
    write!(out, "{:04x}", data.len() + 4)?;
    out.write_all(data)
}

fn write_flush(out: &mut impl Write) -> std::io::Result<()> {
    out.write_all(b"0000")
}

/// One pkt-line: `None` for a flush packet.
fn read_pkt(input: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = [0u8; 4];
    input.read_exact(&mut head)?;
    let len = std::str::from_utf8(&head)
        .ok()
        .and_then(|h| usize::from_str_radix(h, 16).ok())
        .ok_or_else(|| std::io::Error::other("bad pkt-line length"))?;
    if len == 0 {
        return Ok(None);
    }
    if len < 4 {
        return Err(std::io::Error::other("bad pkt-line length"));
    }
    let mut data = vec![0u8; len - 4];
    input.read_exact(&mut data)?;
    Ok(Some(data))
}

/// Text packets up to a flush, each without its trailing newline.
fn read_list(input: &mut impl Read) -> std::io::Result<Vec<String>> {
    let mut lines = Vec::new();
    while let Some(packet) = read_pkt(input)? {
        let text = String::from_utf8_lossy(&packet);
        lines.push(text.trim_end_matches('\n').to_owned());
    }
    Ok(lines)
}

/// Why one conversion by a long-running filter failed.
enum Failure {
    /// The filter refused this file (`status=error`): it stays usable.
    Refused(String),
    /// The filter is gone or speaks nonsense (`status=abort` too): not asked again.
    Broken(String),
}

impl Failure {
    fn into_reason(self) -> String {
        match self {
            Failure::Refused(r) | Failure::Broken(r) => r,
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Broken(format!("the filter process failed: {e}"))
    }
}

/// A `filter.<name>.process` filter (git's long-running filter protocol, version 2).
struct LongRunning {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    clean: bool,
    smudge: bool,
}

impl LongRunning {
    /// Starts `command` and shakes hands: version 2, capabilities clean and smudge.
    fn start(command: &str, cwd: &Path) -> Result<LongRunning, String> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run '{command}': {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("no pipes to the filter process".to_owned());
        };
        let mut filter = LongRunning {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            clean: false,
            smudge: false,
        };
        match filter.handshake() {
            Ok(()) => Ok(filter),
            Err(e) => {
                filter.stop();
                Err(format!("'{command}': {e}"))
            }
        }
    }

    fn handshake(&mut self) -> std::io::Result<()> {
        let out = &mut self.stdin;
        write_pkt(out, b"git-filter-client\n")?;
        write_pkt(out, b"version=2\n")?;
        write_flush(out)?;
        out.flush()?;
        let welcome = read_list(&mut self.stdout)?;
        if welcome.first().map(String::as_str) != Some("git-filter-server")
            || !welcome.iter().any(|l| l == "version=2")
        {
            return Err(std::io::Error::other(format!(
                "not a version 2 filter process (said {welcome:?})"
            )));
        }
        let out = &mut self.stdin;
        write_pkt(out, b"capability=clean\n")?;
        write_pkt(out, b"capability=smudge\n")?;
        write_flush(out)?;
        out.flush()?;
        for capability in read_list(&mut self.stdout)? {
            match capability.as_str() {
                "capability=clean" => self.clean = true,
                "capability=smudge" => self.smudge = true,
                _ => {}
            }
        }
        Ok(())
    }

    /// One file through the filter.
    fn convert(
        &mut self,
        direction: Direction,
        path: &Path,
        content: &[u8],
    ) -> Result<Vec<u8>, Failure> {
        let capable = match direction {
            Direction::Clean => self.clean,
            Direction::Smudge => self.smudge,
        };
        if !capable {
            return Err(Failure::Refused(format!(
                "the filter process does not {}",
                direction.name()
            )));
        }
        let out = &mut self.stdin;
        write_pkt(out, format!("command={}\n", direction.name()).as_bytes())?;
        let mut pathname = b"pathname=".to_vec();
        pathname.extend_from_slice(path.as_os_str().as_encoded_bytes());
        pathname.push(b'\n');
        write_pkt(out, &pathname)?;
        write_flush(out)?;
        for chunk in content.chunks(PKT_MAX) {
            write_pkt(out, chunk)?;
        }
        write_flush(out)?;
        out.flush()?;
        let status = |list: &[String]| {
            list.iter()
                .rev()
                .find_map(|l| l.strip_prefix("status=").map(str::to_owned))
        };
        let first = status(&read_list(&mut self.stdout)?);
        match first.as_deref() {
            Some("success") => {}
            Some("abort") => return Err(Failure::Broken("the filter process aborted".into())),
            Some(other) => {
                return Err(Failure::Refused(format!("the filter process said {other}")));
            }
            None => return Err(Failure::Broken("the filter process sent no status".into())),
        }
        let mut converted = Vec::with_capacity(content.len());
        while let Some(packet) = read_pkt(&mut self.stdout)? {
            converted.extend_from_slice(&packet);
        }
        // A second status list: empty keeps "success"; anything else overrides it.
        match status(&read_list(&mut self.stdout)?).as_deref() {
            None | Some("success") => Ok(converted),
            Some("abort") => Err(Failure::Broken("the filter process aborted".into())),
            Some(other) => Err(Failure::Refused(format!("the filter process said {other}"))),
        }
    }

    /// Closes its input (the protocol's way to say "done") and waits for it to exit.
    fn stop(self) {
        let LongRunning {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_f_is_the_quoted_path() {
        assert_eq!(
            expand("x %f %% %q", Path::new("it's a!.txt")),
            r"x 'it'\''s a'\!'.txt' % %q"
        );
    }

    #[test]
    fn pkt_lines_round_trip() {
        let mut buffer = Vec::new();
        write_pkt(&mut buffer, b"version=2\n").expect("write");
        write_flush(&mut buffer).expect("write");
        assert_eq!(buffer, b"000eversion=2\n0000");
        let mut input = buffer.as_slice();
        assert_eq!(read_list(&mut input).expect("read"), ["version=2"]);
    }
}
