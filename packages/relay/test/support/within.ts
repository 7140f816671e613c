/**
 * `promise`, or a failure naming `what` after `ms`. A guard against a hang, so a socket
 * that never closes fails its test with a message instead of running into the runner's
 * timeout; not a timing assertion.
 */
export async function within<T>(promise: Promise<T>, what: string, ms = 3000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const guard = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
  }
}
