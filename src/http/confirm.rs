//! The visualisation password page, `/confirm/{id}` (issue 20): where a person types the
//! Loxone visualisation password for one pending command, so that it never passes through the
//! model. A URL-mode elicitation (`elicitation/create` with `mode: "url"`) sends the user here;
//! the page belongs to one pending request ([`PasswordPages`]), lives as long as it (2 minutes
//! by default) and takes one answer.
//!
//! | request | answer |
//! |---|---|
//! | `GET /confirm/{id}` of an open page | 200: the control, its room and the action in plain words, a password field, "Confirm" and "Do not do it" |
//! | `POST /confirm/{id}` (form: `token`, `password` or `answer=decline`) | 200 "handed over" / "nothing was done" |
//! | unknown, answered or ended page | 404 `NOT_FOUND` |
//! | expired page | 410 `GONE` |
//! | form token not the page's | 403 `FORBIDDEN` |
//! | no or empty password, a password over [`MAX_PASSWORD`] bytes, a form that is not `application/x-www-form-urlencoded` | 400 `INVALID_REQUEST` |
//! | body over [`MAX_FORM_BYTES`] | 413 `PAYLOAD_TOO_LARGE` |
//! | `/confirm/assets/confirm.css` | the page's style (see [`super::assets`]) |
//! | other methods | 405 |
//!
//! No API key: the id (128 random bits, in the path) is the page's capability, and the form
//! token (another 128 bits, in the form only) must come back with the `POST`, so a page of
//! another site cannot post blindly (the router also refuses a foreign `Origin`). Every answer
//! carries [`super::assets::SECURITY_HEADERS`] (the admin page's) and `Cache-Control:
//! no-store`, except that `Referrer-Policy` is `same-origin`: with `no-referrer`, browsers send
//! `Origin: null` with the form's `POST` and the router's Origin check refuses it (found by
//! the browser test, tests/e2e/visu_page.py). The password is never logged; the log says only that a page was answered.

use super::html_escape;
use std::time::Instant;

use super::assets::{self, SECURITY_HEADERS};
use super::{header, rest_error, Answer};
use crate::home::Secret;
use crate::mcp::password::{self, PageError, PasswordPages, MAX_PASSWORD, PATH_PREFIX};

/// Largest form body taken (bytes).
pub const MAX_FORM_BYTES: usize = 4096;

/// The page's style.
pub const STYLE: assets::Asset = assets::Asset {
    path: "/confirm/assets/confirm.css",
    content_type: "text/css; charset=utf-8",
    body: include_str!("../../assets/confirm/confirm.css"),
};

/// Answers `request` for `path` (under [`PATH_PREFIX`]).
pub(crate) fn handle(
    pages: &PasswordPages,
    request: &mut tiny_http::Request,
    path: &str,
) -> Answer {
    if path == STYLE.path {
        return assets::serve(&STYLE, request.method(), header(request, "If-None-Match"));
    }
    let id = path.strip_prefix(PATH_PREFIX).unwrap_or_default();
    let answer = if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        rest_error(404, "NOT_FOUND", "no such page")
    } else {
        match request.method() {
            tiny_http::Method::Get => match pages.view(id, Instant::now()) {
                Ok(view) => html(200, &form_page(id, &view.question, &view.token)),
                Err(e) => page_error(e),
            },
            tiny_http::Method::Post => post(pages, request, id),
            _ => super::method_not_allowed("GET, POST"),
        }
    };
    SECURITY_HEADERS
        .iter()
        .fold(answer, |a, (name, value)| match *name {
            // `no-referrer` makes browsers send `Origin: null` with the form's POST, which the
            // router's Origin check refuses: same-origin keeps the Origin (and sends no
            // referrer to other sites; the page links nowhere).
            "Referrer-Policy" => a.with_header(name, "same-origin"),
            _ => a.with_header(name, *value),
        })
        .with_header("Cache-Control", "no-store")
}

fn post(pages: &PasswordPages, request: &mut tiny_http::Request, id: &str) -> Answer {
    let form = header(request, "Content-Type")
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return rest_error(
            400,
            "INVALID_REQUEST",
            "send the page's form (application/x-www-form-urlencoded)",
        );
    }
    let text = match super::body::text(request, MAX_FORM_BYTES) {
        Ok(text) => text,
        Err(super::body::BodyError::TooLarge { .. }) => {
            return rest_error(
                413,
                "PAYLOAD_TOO_LARGE",
                &format!("the form exceeds {MAX_FORM_BYTES} bytes"),
            )
        }
        Err(e) => return rest_error(400, "INVALID_REQUEST", &e.to_string()),
    };
    let Ok(params) = crate::auth::oauth::Params::parse(&text) else {
        return rest_error(400, "INVALID_REQUEST", "the form cannot be read");
    };
    let field = |name: &str, max: usize| params.one(name, max).ok().flatten();
    let token = field("token", 64).unwrap_or_default();
    let decline = field("answer", 16) == Some("decline");
    let answer = if decline {
        password::Answer::Decline
    } else {
        match params.one("password", MAX_PASSWORD) {
            Ok(Some(pw)) => password::Answer::Password(Secret::new(pw)),
            Ok(None) => return rest_error(400, "INVALID_REQUEST", "enter the password"),
            Err(_) => {
                return rest_error(
                    400,
                    "INVALID_REQUEST",
                    &format!("the password is longer than {MAX_PASSWORD} bytes"),
                )
            }
        }
    };
    match pages.answer(id, token, answer, Instant::now()) {
        Ok(()) => {
            log::info!(
                "password page {}****: {}",
                id.get(..6).unwrap_or(""),
                if decline { "declined" } else { "answered" }
            );
            html(
                200,
                &done_page(if decline {
                    "Nothing was done. You can close this page."
                } else {
                    "The password was handed to the waiting command. You can close this page; \
                     your assistant shows the result."
                }),
            )
        }
        Err(e) => page_error(e),
    }
}

fn page_error(e: PageError) -> Answer {
    match e {
        PageError::Unknown => rest_error(404, "NOT_FOUND", &e.to_string()),
        PageError::Expired => rest_error(410, "GONE", &e.to_string()),
        PageError::BadToken => rest_error(403, "FORBIDDEN", &e.to_string()),
    }
}

fn html(status: u16, body: &str) -> Answer {
    Answer::with_body(status, "text/html; charset=utf-8", body.as_bytes().to_vec())
}

fn head(title: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><link rel=\"icon\" href=\"data:,\">\
         <link rel=\"stylesheet\" href=\"{}\"></head>",
        html_escape(title),
        STYLE.path
    )
}

fn form_page(id: &str, question: &str, token: &str) -> String {
    format!(
        "{}<body><main>\
         <h1>Loxone visualisation password</h1>\
         <p id=\"question\" class=\"question\">{}</p>\
         <p>Enter the visualisation password to do this. It goes to this home server only, \
         never to the assistant, and is used for this one command.</p>\
         <form method=\"post\" action=\"{PATH_PREFIX}{id}\">\
         <input type=\"hidden\" name=\"token\" value=\"{}\">\
         <label for=\"password\">Visualisation password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"off\" \
         maxlength=\"{MAX_PASSWORD}\" autofocus>\
         <div class=\"buttons\"><button id=\"confirm\" type=\"submit\" name=\"answer\" \
         value=\"confirm\">Confirm</button>\
         <button id=\"decline\" type=\"submit\" name=\"answer\" value=\"decline\" \
         class=\"secondary\">Do not do it</button></div>\
         </form></main></body></html>\n",
        head("Loxone visualisation password"),
        html_escape(question),
        html_escape(token),
    )
}

fn done_page(message: &str) -> String {
    format!(
        "{}<body><main><h1>Loxone visualisation password</h1>\
         <p id=\"done\">{}</p></main></body></html>\n",
        head("Loxone visualisation password"),
        html_escape(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_is_text_not_markup() {
        let page = form_page("ab12", "Disarm <b>\"Alarm\"</b> & co?", "t0k");
        assert!(page.contains("Disarm &lt;b&gt;&quot;Alarm&quot;&lt;/b&gt; &amp; co?"));
        assert!(page.contains("value=\"t0k\""));
        assert!(page.contains("action=\"/confirm/ab12\""));
    }
}
