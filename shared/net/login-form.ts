/**
 * The login form of a login page (`fetch.auth[].form.readForm`): which form to submit, where to,
 * and the values a browser would send with it — the hidden fields (CSRF tokens, a session code),
 * prefilled values, checked boxes, selected options and the first submit button's name — before
 * the configured fields replace theirs. Streamed with htmlparser2 (no DOM): the fetch function
 * loads it already.
 */
import { Parser } from 'htmlparser2';

export interface LoginForm {
  /** the absolute URL the form posts to (its `action`, else the page's own URL) */
  action: string;
  method: 'get' | 'post';
  /** name/value pairs in document order, as a browser submits them */
  fields: [string, string][];
}

interface ParsedForm {
  action: string | null;
  method: string;
  fields: [string, string][];
  names: Set<string>;
  hasPassword: boolean;
  submit: [string, string] | null;
}

/** Controls that a submission never carries (RFC: only the clicked button is sent, see `submit`). */
const NOT_SENT = new Set(['submit', 'button', 'image', 'reset', 'file']);

/**
 * The forms of `html` (at most `maxForms`) with their controls. Inputs outside every form and
 * disabled controls are left out, as a browser leaves them out of a submission.
 */
function parseForms(html: string, maxForms = 100): ParsedForm[] {
  const forms: ParsedForm[] = [];
  let form: ParsedForm | null = null;
  let select: { name: string; value: string | null; first: string | null; multiple: boolean } | null = null;
  let option: { value: string | null; selected: boolean; text: string } | null = null;
  let textarea: { name: string; text: string } | null = null;
  const endOption = () => {
    if (!option || !select) return;
    const value = option.value ?? option.text.trim();
    select.first ??= value;
    if (option.selected && (select.value === null || select.multiple)) {
      if (select.multiple) form?.fields.push([select.name, value]);
      else select.value = value;
    }
    option = null;
  };
  const parser = new Parser(
    {
      onopentag(tag, a) {
        if (tag === 'form') {
          if (forms.length >= maxForms) return;
          form = {
            action: a.action ?? null,
            method: (a.method ?? 'get').toLowerCase(),
            fields: [],
            names: new Set(),
            hasPassword: false,
            submit: null,
          };
          forms.push(form);
          return;
        }
        if (!form) return;
        const name = a.name;
        const disabled = a.disabled !== undefined;
        if (tag === 'input') {
          const type = (a.type ?? 'text').toLowerCase();
          if (type === 'password') form.hasPassword = true;
          if (!name || disabled) return;
          form.names.add(name);
          if (type === 'submit' || type === 'button') {
            if (type === 'submit') form.submit ??= [name, a.value ?? 'Submit'];
            return;
          }
          if (NOT_SENT.has(type)) return;
          if ((type === 'checkbox' || type === 'radio') && a.checked === undefined) return;
          form.fields.push([name, a.value ?? (type === 'checkbox' || type === 'radio' ? 'on' : '')]);
        } else if (tag === 'button') {
          const type = (a.type ?? 'submit').toLowerCase();
          if (name && !disabled && type === 'submit') form.submit ??= [name, a.value ?? ''];
        } else if (tag === 'select' && name && !disabled) {
          form.names.add(name);
          select = { name, value: null, first: null, multiple: a.multiple !== undefined };
        } else if (tag === 'option' && select) {
          endOption();
          option = { value: a.value ?? null, selected: a.selected !== undefined, text: '' };
        } else if (tag === 'textarea' && name && !disabled) {
          form.names.add(name);
          textarea = { name, text: '' };
        }
      },
      ontext(text) {
        if (option) option.text += text;
        if (textarea) textarea.text += text;
      },
      onclosetag(tag) {
        if (tag === 'option') endOption();
        else if (tag === 'select' && select) {
          endOption();
          const value = select.multiple ? null : (select.value ?? select.first);
          if (value !== null) form?.fields.push([select.name, value]);
          select = null;
        } else if (tag === 'textarea' && textarea) {
          // A browser drops the first newline after <textarea> (HTML §13.2.6.4.7).
          form?.fields.push([textarea.name, textarea.text.replace(/^\r?\n/, '')]);
          textarea = null;
        } else if (tag === 'form') form = null;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  return forms;
}

/**
 * The login form of a page: the form with the most of the configured field names, a form with a
 * password input winning a tie; a form with none of them counts only when it has a password input.
 * Its `action` is resolved against the page's URL (`pageUrl`, after redirects).
 */
export function findLoginForm(html: string, pageUrl: string, fieldNames: string[]): LoginForm | null {
  let best: { form: ParsedForm; score: number } | null = null;
  for (const form of parseForms(html)) {
    const matches = fieldNames.filter((n) => form.names.has(n)).length;
    if (matches === 0 && !form.hasPassword) continue;
    const score = matches * 2 + (form.hasPassword ? 1 : 0);
    if (!best || score > best.score) best = { form, score };
  }
  if (!best) return null;
  const { form } = best;
  const action = URL.parse(form.action?.trim() || pageUrl, pageUrl);
  if (!action) return null;
  action.hash = '';
  const fields = form.submit ? [...form.fields, form.submit] : form.fields;
  return { action: action.href, method: form.method === 'post' ? 'post' : 'get', fields };
}

/**
 * What a login sends: the form's own values with the configured ones in their place (in the form's
 * order; a configured field the form lacks is appended). A configured field replaces every value
 * of that name; the submit button is left out when a configured field has its name.
 */
export function loginBody(form: LoginForm | null, configured: Record<string, string>): string {
  const body = new URLSearchParams();
  const placed = new Set<string>();
  for (const [name, value] of form?.fields ?? []) {
    if (!(name in configured)) body.append(name, value);
    else if (!placed.has(name)) {
      body.append(name, configured[name]!);
      placed.add(name);
    }
  }
  for (const [name, value] of Object.entries(configured)) if (!placed.has(name)) body.append(name, value);
  return body.toString();
}
