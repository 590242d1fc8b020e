//! The user's identity as git would sign a commit with it: `GIT_<ROLE>_NAME`, `_EMAIL` and
//! `_DATE` from the environment before `user.name`/`user.email` and the current time, the
//! date read in every form git reads (libgit2 reads only the config).

use git2::{Repository, Signature};

/// The user's identity as git would use it: `GIT_<ROLE>_NAME`, `_EMAIL` and `_DATE` from the
/// environment win over `user.name`/`user.email` and the current time (libgit2 reads only
/// the config).
pub fn identity(repo: &Repository, role: &str) -> Result<Signature<'static>, git2::Error> {
    let env = |key: &str| std::env::var(format!("GIT_{role}_{key}")).ok();
    let configured = repo.signature();
    let name = env("NAME").or_else(|| {
        configured
            .as_ref()
            .ok()
            .and_then(|s| s.name().ok().map(str::to_owned))
    });
    let email = env("EMAIL").or_else(|| {
        configured
            .as_ref()
            .ok()
            .and_then(|s| s.email().ok().map(str::to_owned))
    });
    let (Some(name), Some(email)) = (name, email) else {
        let missing = Missing { role: role.into() };
        return Err(git2::Error::new(
            git2::ErrorCode::NotFound,
            git2::ErrorClass::Config,
            format!("{}; {}", missing.message(), missing.hint()),
        ));
    };
    match env("DATE") {
        Some(date) => Signature::new(&name, &email, &git_date(role, &date)?),
        None => Signature::now(&name, &email),
    }
}

/// Whether git knows who commits (author and committer, as [`identity`] reads them): when it
/// does not, what git says and what to run, before anything is done.
pub fn known(repo: &Repository) -> Result<(), Missing> {
    for role in ["AUTHOR", "COMMITTER"] {
        if identity(repo, role).is_err_and(|e| e.code() == git2::ErrorCode::NotFound) {
            return Err(Missing { role: role.into() });
        }
    }
    Ok(())
}

/// No `user.name` or `user.email` (nor `GIT_<ROLE>_NAME`/`_EMAIL`): git refuses to commit,
/// and so does git-loaf, in git's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// `AUTHOR` or `COMMITTER`.
    pub role: String,
}

impl Missing {
    /// The missing identity `error` (from [`identity`]) reports, if that is what it is.
    pub fn from_error(error: &git2::Error) -> Option<Missing> {
        if error.code() != git2::ErrorCode::NotFound || error.class() != git2::ErrorClass::Config {
            return None;
        }
        ["AUTHOR", "COMMITTER"]
            .into_iter()
            .map(|role| Missing { role: role.into() })
            .find(|missing| error.message().starts_with(&missing.message()))
    }

    /// What git says: `Author identity unknown`.
    pub fn message(&self) -> String {
        let mut role = self.role.to_lowercase();
        if let Some(first) = role.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        format!(
            "{role} identity unknown: git does not know who you are (user.name or user.email is not set), and git-loaf commits as you"
        )
    }

    /// What git tells you to run.
    pub fn hint(&self) -> String {
        "tell git who you are: `git config --global user.name \"Your Name\"` and `git config --global user.email \"you@example.com\"` (omit --global to set it in this repository only), then run the command again".into()
    }
}

/// `GIT_<ROLE>_DATE` read as git reads it, in every form git accepts (RFC 2822, ISO 8601,
/// `@<seconds> <±hhmm>`, ...): git's raw form is taken as it is, anything else is handed to
/// `git var`, git's own parser; a date git refuses is refused with git's reason, never
/// silently replaced by the current time.
fn git_date(role: &str, date: &str) -> Result<git2::Time, git2::Error> {
    if let Some(time) = raw_date(date) {
        return Ok(time);
    }
    let ident = std::process::Command::new("git")
        .args(["var", &format!("GIT_{role}_IDENT")])
        // Only the date is wanted: a name and an email so that git asks for nothing else.
        .env(format!("GIT_{role}_NAME"), "git-loaf")
        .env(format!("GIT_{role}_EMAIL"), "git-loaf@localhost")
        .env(format!("GIT_{role}_DATE"), date)
        .output();
    let refused = |why: &str| {
        git2::Error::from_str(&format!(
            "GIT_{role}_DATE='{date}' is not a date git accepts ({why}): write it as git does, e.g. `2005-04-07T22:13:13+0200`, `Thu, 07 Apr 2005 22:13:13 +0200` or `@1112911993 +0200`, or unset it"
        ))
    };
    match ident {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            // `Name <email> <seconds> <±hhmm>`: the raw form again.
            let tail: Vec<&str> = text.trim_end().rsplitn(3, ' ').collect();
            match tail.as_slice() {
                [zone, seconds, _] => raw_date(&format!("{seconds} {zone}")),
                _ => None,
            }
            .ok_or_else(|| refused(&format!("git var printed '{}'", text.trim_end())))
        }
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            Err(refused(said.trim().trim_start_matches("fatal: ")))
        }
        Err(error) => Err(refused(&format!(
            "git could not be run to read it: {error}"
        ))),
    }
}

/// git's raw date form, `<seconds> <±hhmm>`, with or without a leading `@`.
fn raw_date(text: &str) -> Option<git2::Time> {
    let text = text.trim();
    let (seconds, zone) = text.strip_prefix('@').unwrap_or(text).split_once(' ')?;
    let seconds: i64 = seconds.parse().ok()?;
    let sign = match zone.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = &zone[1..];
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hhmm: i32 = digits.parse().ok()?;
    Some(git2::Time::new(
        seconds,
        sign * (hhmm / 100 * 60 + hhmm % 100),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::{git, init_repo};

    #[test]
    fn dates_are_read_in_every_form_git_takes_as_git_reads_them() {
        let dir = init_repo();
        let root = dir.path();
        // The oracle: the date git itself records in a commit given the same variable.
        let by_git = |date: &str| {
            let tree = git(root, &["write-tree"]);
            let out = std::process::Command::new("git")
                .args(["commit-tree", tree.trim(), "-m", "x"])
                .current_dir(root)
                .env("GIT_COMMITTER_DATE", date)
                .output()
                .expect("git runs");
            assert!(out.status.success(), "git refused {date}");
            let commit = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            git(root, &["log", "-1", "--date=raw", "--format=%cd", &commit])
                .trim()
                .to_owned()
        };
        let ours = |date: &str| {
            let time = git_date("COMMITTER", date).expect("accepted");
            let minutes = time.offset_minutes();
            let sign = if minutes < 0 { '-' } else { '+' };
            let minutes = minutes.abs();
            format!(
                "{} {sign}{:02}{:02}",
                time.seconds(),
                minutes / 60,
                minutes % 60
            )
        };
        for date in [
            "Thu, 07 Apr 2005 22:13:13 +0200",
            "Thu, 7 Apr 2005 22:13:13 -0700",
            "2005-04-07T22:13:13+0200",
            "2005-04-07T22:13:13Z",
            "2005-04-07 22:13:13",
            "2005.04.07T22:13:13 +0530",
            "@1112911993 +0200",
            "1112911993 -0130",
            "2026-01-01T00:00:00Z",
        ] {
            assert_eq!(ours(date), by_git(date), "{date}");
        }
        let refused = git_date("COMMITTER", "next tuesday").expect_err("refused");
        assert!(
            refused
                .message()
                .contains("GIT_COMMITTER_DATE='next tuesday' is not a date git accepts"),
            "{refused}"
        );
    }
}
