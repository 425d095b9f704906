/**
 * The login form of a login page (fetch.auth form.readForm): which form, where it posts, and the
 * values a browser sends with it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findLoginForm, loginBody } from '../../../shared/net/login-form.ts';

const PAGE = 'https://portal.example/accounts/login/?next=/app/';

describe('findLoginForm', () => {
  it("picks the form with the configured fields over a search form, and keeps a browser's values", () => {
    const html = `<html><body>
      <form action="/search" method="get"><input name="q" value="x"><input type="submit" name="go" value="Go"></form>
      <FORM METHOD="POST" ACTION="">
        <input type="hidden" name="csrfmiddlewaretoken" value="tok&amp;en">
        <input type="text" name="username">
        <input type="password" name="password" value="prefilled">
        <input type="checkbox" name="remember" checked>
        <input type="checkbox" name="newsletter" value="yes">
        <input type="radio" name="lang" value="en"><input type="radio" name="lang" value="de" checked>
        <input type="text" name="off" value="v" disabled>
        <input type="file" name="avatar">
        <select name="realm"><option value="staff">Staff</option><option selected>Partners</option></select>
        <select name="zone"><option value="eu">EU</option><option value="us">US</option></select>
        <textarea name="comment">
line</textarea>
        <input type="submit" name="login" value="Log in">
        <button type="submit" name="other" value="2">Other</button>
      </form></body></html>`;
    const form = findLoginForm(html, PAGE, ['username', 'password']);
    assert.ok(form);
    assert.equal(form.action, PAGE.replace(/#.*/, ''), 'an empty action posts to the page itself');
    assert.equal(form.method, 'post');
    assert.deepEqual(form.fields, [
      ['csrfmiddlewaretoken', 'tok&en'],
      ['username', ''],
      ['password', 'prefilled'],
      ['remember', 'on'],
      ['lang', 'de'],
      ['realm', 'Partners'],
      ['zone', 'eu'],
      ['comment', 'line'],
      ['login', 'Log in'],
    ]);
  });

  it('resolves the action against the page and drops its fragment', () => {
    const html = `<form method=post action="../../realms/x/login-actions/authenticate?session_code=abc&amp;tab_id=t#f">
      <input name=username><input type=password name=password></form>`;
    const form = findLoginForm(html, 'https://sso.example/auth/realms/x/protocol', ['username']);
    assert.equal(
      form?.action,
      'https://sso.example/auth/realms/x/login-actions/authenticate?session_code=abc&tab_id=t',
    );
  });

  it('takes a form with a password input when no form has the configured names, and none otherwise', () => {
    const withPassword = '<form action="/in"><input name="login_id"><input type="password" name="pw"></form>';
    assert.equal(findLoginForm(withPassword, PAGE, ['user'])?.action, 'https://portal.example/in');
    const noLogin = '<form action="/search"><input name="q"></form><input name="user">';
    assert.equal(findLoginForm(noLogin, PAGE, ['user']), null, 'an input outside every form is no form');
    assert.equal(findLoginForm('<p>not html at all', PAGE, ['user']), null);
  });
});

describe('loginBody', () => {
  it("puts the configured values in the form's places, once per name, and appends the others", () => {
    const form = {
      action: PAGE,
      method: 'post' as const,
      fields: [
        ['token', 't1'],
        ['user', ''],
        ['user', 'second'],
        ['pass', 'prefilled'],
        ['login', 'Log in'],
      ] as [string, string][],
    };
    assert.equal(
      loginBody(form, { user: 'ann', pass: 'p&ss w', otp: '1' }),
      'token=t1&user=ann&pass=p%26ss+w&login=Log+in&otp=1',
    );
    assert.equal(loginBody(null, { user: 'ann', pass: 'x' }), 'user=ann&pass=x', 'no form: the fields alone');
  });
});
