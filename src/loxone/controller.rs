//! The Loxone client as the house's [`Controller`]: actions become commands
//! ([`super::commands`]), answers become values, and [`LoxoneError`] is mapped once to the
//! controller-independent [`ControllerError`].

use crate::home::{
    Action, Alert, AlertOp, Control, Controller, ControllerError, MessageCenter, Secret, Value,
};

use super::client::{parse_number_prefix, Client, LlAnswer, LoxoneError};
use super::commands::command_for;

impl From<LoxoneError> for ControllerError {
    fn from(e: LoxoneError) -> Self {
        match e {
            LoxoneError::Connection(m) => ControllerError::Connection(m),
            LoxoneError::Unavailable => {
                ControllerError::Connection("the Miniserver is restarting (503)".into())
            }
            LoxoneError::Unauthorized => ControllerError::Unauthorized(
                "check HOME_USER and HOME_PASS (401 Unauthorized)".into(),
            ),
            // Passed on only when the fresh login could not follow; the next request logs in.
            e @ LoxoneError::TokenUnknown => ControllerError::Connection(e.to_string()),
            LoxoneError::LockedOut { remaining_secs } => {
                ControllerError::LockedOut { remaining_secs }
            }
            LoxoneError::NotFound(m) => ControllerError::NotFound(m),
            LoxoneError::Forbidden(m) => ControllerError::Rejected {
                code: 403,
                message: m,
            },
            LoxoneError::Status { code, message } => ControllerError::Rejected { code, message },
            LoxoneError::BadAnswer(m) => ControllerError::Rejected {
                code: 0,
                message: m,
            },
            LoxoneError::WrongVisuPassword => ControllerError::VisuPasswordWrong,
            LoxoneError::InvalidSegment(m) => ControllerError::InvalidValue(m),
        }
    }
}

/// The answer's value as a number when it is one (units such as `"31.0 Liter"` or `"21.5°"`
/// are dropped), else as text (`"hsv(20,100,50)"`, dates, names).
fn answer_value(a: &LlAnswer) -> Option<Value> {
    let text = a.value_text()?;
    let trimmed = text.trim();
    let numeric_len = trimmed
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '-' || *c == '+'))
        })
        .count();
    let rest = &trimmed[numeric_len..];
    Some(match parse_number_prefix(trimmed) {
        Some(n) if !rest.chars().any(|c| c.is_ascii_digit()) => Value::Number(n),
        _ => Value::Text(text),
    })
}

impl Controller for Client {
    fn act(&self, control: &Control, action: &Action) -> Result<Option<Value>, ControllerError> {
        let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
        let answer = self.command(&cmd.target, &cmd.segments)?;
        Ok(answer_value(&answer))
    }

    fn act_secured(
        &self,
        control: &Control,
        action: &Action,
        visu_password: &Secret,
    ) -> Result<Option<Value>, ControllerError> {
        let cmd = command_for(control, action).map_err(ControllerError::Unsupported)?;
        let answer = self.secured_command(&cmd.target, &cmd.segments, visu_password.expose())?;
        Ok(answer_value(&answer))
    }

    fn read(&self, control: &Control) -> Result<Value, ControllerError> {
        let answer = self.read_value(&control.uuid)?;
        answer_value(&answer).ok_or_else(|| ControllerError::Rejected {
            code: 0,
            message: format!("no value in the answer for {}", control.uuid),
        })
    }

    fn alerts(&self, mc: &MessageCenter) -> Result<Vec<Alert>, ControllerError> {
        self.message_center_entries(mc)
    }

    fn alert_op(
        &self,
        mc: &MessageCenter,
        entry: &str,
        op: AlertOp,
    ) -> Result<(), ControllerError> {
        self.message_center_op(mc, entry, op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ll(v: &str) -> LlAnswer {
        LlAnswer {
            control: String::new(),
            value: serde_json::Value::String(v.into()),
            code: 200,
            extra: Default::default(),
        }
    }

    #[test]
    fn values_are_numbers_or_text() {
        assert_eq!(answer_value(&ll("75.000")), Some(Value::Number(75.0)));
        assert_eq!(answer_value(&ll("31.0 Liter")), Some(Value::Number(31.0)));
        assert_eq!(answer_value(&ll("-2.5°")), Some(Value::Number(-2.5)));
        assert_eq!(
            answer_value(&ll("hsv(20,100,50)")),
            Some(Value::Text("hsv(20,100,50)".into()))
        );
        assert_eq!(
            answer_value(&ll("2017-11-22 18:41:01")),
            Some(Value::Text("2017-11-22 18:41:01".into()))
        );
    }

    #[test]
    fn errors_map_to_spec_codes() {
        let e: ControllerError = LoxoneError::Connection("refused".into()).into();
        assert_eq!(e.code(), "CONNECTION_ERROR");
        let e: ControllerError = LoxoneError::NotFound("x".into()).into();
        assert_eq!(e.code(), "DEVICE_NOT_FOUND");
        let e: ControllerError = LoxoneError::LockedOut { remaining_secs: 9 }.into();
        assert!(e.to_string().contains("9 s"));
    }
}
