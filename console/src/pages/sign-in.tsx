import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { signIn } from '../api.js';
import { field, messageOf } from '../util.js';

/** The sign-in form: the API's users, by email and password. */
export function SignIn({ onSignedIn }: { onSignedIn: () => void }): JSX.Element {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    setBusy(true);
    setError(undefined);
    try {
      await signIn(field(form, 'email'), field(form, 'password'));
      onSignedIn();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <form onSubmit={(e) => void submit(e)} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Ferry console</h1>
        <p class="muted">Sign in with your Ferry user (the same email and password as the API).</p>
        <label>
          Email
          <input name="email" type="email" autoComplete="username" required autoFocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
