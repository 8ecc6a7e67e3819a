import { renderTools } from './chat-template.ts'
import type { Tokenizer } from './tokenizer.ts'

/**
 * triad's own chat format (`chat-template.ts`, `TriadChatFormat` with compact tools, the format
 * every triad run trains with) written as a Hugging Face Jinja `chat_template`, for the
 * `tokenizer_config.json` of `triad export --hf`: rendered with `messages`, `tools` and
 * `add_generation_prompt` (as `apply_chat_template` does) and tokenized with the exported
 * `tokenizer.json`, a conversation gives exactly the ids triad trains on and samples from.
 *
 * - Each message is `<|im_start|>{role}\n{body}<|im_end|>\n`; the generation prompt is
 *   `<|im_start|>assistant\n`.
 * - Tools go at the end of the first system message after a blank line (or in a system message of
 *   their own), one compact line each after the call syntax (`renderTools`).
 * - An assistant body is its content, then per tool call `<tool_call>` (the special token),
 *   `{"name":..,"arguments":..}` in compact JSON, `</tool_call>`. `arguments` may be an object (the
 *   `transformers` convention; written with `tojson` without spaces) or the OpenAI JSON string
 *   (written as it is: triad's own strings are compact, `JSON.stringify`).
 * - triad encodes message text as plain bytes, so a special token's string inside a message (the
 *   `<tool_call>` of the tool syntax line, a user who types `<|im_end|>`) is not that token. A
 *   Hugging Face tokenizer always matches added tokens in the text, so the template writes such a
 *   string with `U+FDD0` (a Unicode noncharacter) after its first character, which no added token
 *   matches, and the exported tokenizer's normalizer removes `U+FDD0` before the byte-level BPE
 *   (`hf-tokenizer-export.ts`). A text that itself holds `U+FDD0` loses it there.
 * - Number formatting of `tojson` follows the renderer: an argument `2.0` is `2` in JavaScript and
 *   `2.0` in Python's `json.dumps`, as triad's `JSON.stringify` writes `2`.
 */

/** The character the template writes after a special token string's first character in message text. */
export const SPECIAL_TEXT_ESCAPE = '\uFDD0'

/** A Jinja string literal (double-quoted, JSON escapes, which Jinja reads the same). */
const literal = (text: string) => JSON.stringify(text)

/** `text` with every special token string broken by `SPECIAL_TEXT_ESCAPE`. */
function escaped(text: string, specials: readonly string[]): string {
  let out = text
  for (const s of specials) out = out.replaceAll(s, s[0] + SPECIAL_TEXT_ESCAPE + s.slice(1))
  return out
}

/**
 * The Jinja chat template of triad's chat format for `tokenizer`'s special tokens.
 * @returns the template source.
 */
export function triadJinjaChatTemplate(tokenizer: Tokenizer): string {
  const specials = [...tokenizer.settings.specialTokens].sort((a, b) => b.length - a.length)
  const escapeFilter = specials
    .map((s) => ` | replace(${literal(s)}, ${literal(s[0] + SPECIAL_TEXT_ESCAPE + s.slice(1))})`)
    .join('')
  // The tool syntax line renderTools writes before the tool lines, as plain text.
  const toolHead = escaped(renderTools([]), specials)
  return `{#- triad's chat format (ChatML with compact tool lines); see triad's gpu/triad-jinja-template.ts. -#}
{%- macro text(content) -%}
  {%- if content is none -%}
  {%- elif content is string -%}{{ content${escapeFilter} }}
  {%- else -%}{%- for part in content -%}{{ part['text']${escapeFilter} }}{%- endfor -%}
  {%- endif -%}
{%- endmacro -%}
{%- macro schema_type(s) -%}
  {%- if s is not mapping -%}any
  {%- elif s['enum'] is defined and s['enum'] is iterable and s['enum'] is not string -%}
    {%- for v in s['enum'] -%}{{ v | tojson }}{{ '|' if not loop.last }}{%- endfor -%}
  {%- elif s['type'] is defined and s['type'] is iterable and s['type'] is not string -%}{{ s['type'] | join('|') }}
  {%- elif s['type'] is defined and s['type'] == 'array' -%}{{ schema_type(s['items']) }}[]
  {%- elif s['type'] is defined and s['type'] == 'object' -%}
    {%- if s['properties'] is defined and s['properties'] is mapping -%}{ {{- params(s) -}} }{%- else -%}object{%- endif -%}
  {%- elif s['type'] is defined and s['type'] is not none -%}{{ s['type'] }}
  {%- else -%}any
  {%- endif -%}
{%- endmacro -%}
{%- macro params(s) -%}
  {%- set required = s['required'] if (s['required'] is defined and s['required'] is iterable and s['required'] is not string) else [] -%}
  {%- set props = s['properties'] if (s['properties'] is defined and s['properties'] is mapping) else {} -%}
  {%- for name, sub in props.items() -%}
    {{- name }}{{ '' if name in required else '?' }}: {{ schema_type(sub) }}{{ ', ' if not loop.last -}}
  {%- endfor -%}
{%- endmacro -%}
{%- macro tool_lines() -%}
  {{- ${literal(toolHead)} -}}
  {%- for tool in tools -%}
    {%- set f = tool['function'] if tool['function'] is defined else tool -%}
    {{- '\\n' }}{% set line %}{{ f['name'] }}({{ params(f['parameters'] if f['parameters'] is defined else {}) }}): {{ f['description'] if f['description'] is defined else '' }}{% endset %}{{ line${escapeFilter} -}}
  {%- endfor -%}
{%- endmacro -%}
{%- set has_tools = tools is defined and tools is not none and tools | length > 0 -%}
{%- if has_tools and not (messages | length > 0 and messages[0]['role'] == 'system') -%}
  {{- '<|im_start|>system\\n' }}{{ tool_lines() }}{{ '<|im_end|>\\n' -}}
{%- endif -%}
{%- for message in messages -%}
  {%- set role = message['role'] -%}
  {%- if role not in ['system', 'user', 'assistant', 'tool'] -%}
    {{- raise_exception('message ' ~ loop.index0 ~ ": unknown role '" ~ role ~ "'") -}}
  {%- endif -%}
  {{- '<|im_start|>' ~ role ~ '\\n' -}}
  {%- if role == 'assistant' -%}
    {{- text(message['content'] if message['content'] is defined else none) -}}
    {%- if message['tool_calls'] is defined and message['tool_calls'] is not none -%}
      {%- for call in message['tool_calls'] -%}
        {%- set f = call['function'] if call['function'] is defined else call -%}
        {%- if f['arguments'] is string -%}{%- set args = f['arguments'] -%}{%- else -%}{%- set args = f['arguments'] | tojson(separators=(',', ':')) -%}{%- endif -%}
        {{- '<tool_call>' }}{% set body %}{"name":{{ f['name'] | tojson }},"arguments":{{ args }}}{% endset %}{{ body${escapeFilter} }}{{ '</tool_call>' -}}
      {%- endfor -%}
    {%- endif -%}
  {%- else -%}
    {{- text(message['content']) -}}
    {%- if loop.first and role == 'system' and has_tools -%}{{ '\\n\\n' }}{{ tool_lines() }}{%- endif -%}
  {%- endif -%}
  {{- '<|im_end|>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}
`
}
