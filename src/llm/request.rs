//! One chat request and its messages: the type every suite renders, the runner sends and the judge step
//! builds (its own module so that `prompts` and `adversariskqa` both depend on it, not on each other).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub(crate) fn new(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// One request to a model: an id unique in its file, the suite, metadata copied into the samples, the
/// messages, and extra fields of the request body (`response_format`, `tools`, `text`: what structured
/// output or a web search needs), which are part of the request's cache key. `meta.api = "responses"`
/// marks a request written for the Responses API.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: String,
    pub suite: String,
    pub meta: Map<String, Value>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub body: Map<String, Value>,
}
