//! The action schema, read once from the compiled-in `unified-design.yaml`: every tool, its
//! kind and its parameters with their types, in the order the schema lists them.

use std::sync::OnceLock;

use serde_json::Value;

use super::SCHEMA_YAML;

/// A parameter's type, as the schema declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    /// Any text.
    String,
    /// A whole number written as text (`"3"`).
    Integer,
    /// `"true"` or `"false"`.
    Boolean,
    /// One of the listed values.
    Enum(Vec<String>),
}

/// What text a string parameter must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An absolute path.
    AbsolutePath,
    /// Absolute paths, one per line; empty lines ignored.
    AbsolutePathsPerLine,
}

/// One parameter of a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamDef {
    /// Its name, the block key.
    pub name: String,
    /// Its type.
    pub ty: ParamType,
    /// Whether a block must give it.
    pub required: bool,
    /// Text format, for strings.
    pub format: Option<Format>,
    /// The value used when a block leaves it out.
    pub default: Option<Value>,
}

/// One tool (action) of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Its name, the value of a block's `action`.
    pub name: String,
    /// `read`, `write`, `dynamic` (exec), `meta` (context), `git`.
    pub kind: String,
    /// Parameters in schema order.
    pub params: Vec<ParamDef>,
    /// The parameter that names what the action works on (shown in the report).
    pub primary_param: Option<String>,
    /// Whether the report shows the action's output.
    pub output: OutputDisplay,
}

/// When the report shows an action's output (the schema's `output_display`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputDisplay {
    /// Reads, listings, searches.
    Always,
    /// Writes: nothing to show.
    Never,
    /// `exec`: unless `return_output` is false.
    Conditional,
}

impl ToolDef {
    /// The parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&ParamDef> {
        self.params.iter().find(|p| p.name == name)
    }
}

/// Every tool of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Tools in schema order.
    pub tools: Vec<ToolDef>,
}

impl Schema {
    /// The compiled-in schema. It is part of the binary and checked by tests, so a schema
    /// that does not load is a build defect; it then has no tools and every action is unknown.
    pub fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            Schema::from_yaml(SCHEMA_YAML).unwrap_or_else(|error| {
                tracing::error!("the compiled-in action schema does not load: {error}");
                Schema { tools: Vec::new() }
            })
        })
    }

    /// Reads a schema from YAML text.
    pub fn from_yaml(text: &str) -> Result<Schema, String> {
        let doc: Value = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let tools = doc
            .get("tools")
            .and_then(Value::as_object)
            .ok_or("no `tools` map")?;
        let tools = tools
            .iter()
            .map(|(name, def)| tool(name, def))
            .collect::<Result<_, _>>()?;
        Ok(Schema { tools })
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Names of every tool.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }
}

fn tool(name: &str, def: &Value) -> Result<ToolDef, String> {
    let kind = def
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut params = Vec::new();
    if let Some(map) = def.get("parameters").and_then(Value::as_object) {
        for (param, spec) in map {
            params.push(param_def(name, param, spec)?);
        }
    }
    let output = match def.get("output_display").and_then(Value::as_str) {
        Some("always") => OutputDisplay::Always,
        Some("conditional") => OutputDisplay::Conditional,
        _ => OutputDisplay::Never,
    };
    Ok(ToolDef {
        name: name.to_owned(),
        kind,
        params,
        primary_param: def
            .get("primary_param")
            .and_then(Value::as_str)
            .map(str::to_owned),
        output,
    })
}

fn param_def(tool: &str, name: &str, spec: &Value) -> Result<ParamDef, String> {
    let ty = match spec.get("type").and_then(Value::as_str) {
        Some("integer") => ParamType::Integer,
        Some("boolean") => ParamType::Boolean,
        Some("enum") => ParamType::Enum(
            spec.get("values")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        Some("string") | None => ParamType::String,
        Some(other) => return Err(format!("{tool}.{name}: unknown type '{other}'")),
    };
    let format = match spec.get("format").and_then(Value::as_str) {
        Some("absolute_path") => Some(Format::AbsolutePath),
        Some("multiline_absolute_paths") => Some(Format::AbsolutePathsPerLine),
        _ => None,
    };
    Ok(ParamDef {
        name: name.to_owned(),
        ty,
        required: spec
            .get("required")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        format,
        default: spec.get("default").cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_schema_has_typed_parameters() {
        let schema = Schema::from_yaml(SCHEMA_YAML).expect("schema loads");
        let exec = schema.tool("exec").expect("exec");
        assert_eq!(exec.kind, "dynamic");
        assert_eq!(
            exec.param("lang").map(|p| &p.ty),
            Some(&ParamType::Enum(vec![
                "python".into(),
                "javascript".into(),
                "bash".into()
            ]))
        );
        assert_eq!(
            exec.param("return_output").and_then(|p| p.default.clone()),
            Some(Value::Bool(true))
        );
        let count = schema
            .tool("file_replace_all_text")
            .and_then(|t| t.param("count"))
            .expect("count");
        assert_eq!(
            (count.ty.clone(), count.required),
            (ParamType::Integer, false)
        );
        let paths = schema
            .tool("files_read")
            .and_then(|t| t.param("paths"))
            .expect("paths");
        assert_eq!(paths.format, Some(Format::AbsolutePathsPerLine));
        let names: Vec<&str> = schema
            .tool("file_write")
            .expect("file_write")
            .params
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["path", "content"]);
        assert_eq!(exec.primary_param.as_deref(), Some("lang"));
        assert_eq!(exec.output, OutputDisplay::Conditional);
        assert_eq!(
            schema.tool("file_read").map(|t| t.output),
            Some(OutputDisplay::Always)
        );
    }
}
