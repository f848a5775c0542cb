import { join } from "node:path";
import { ErrorCode, isTimewarpError, readJsonFile, TimewarpError } from "../core/index.ts";
import { memoryPaths } from "./run-dir.ts";
import { type Profile, ProfileSchema } from "./schemas.ts";

const USER_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** `.timewarp/memory/profiles/<user>.json`; INVALID_INPUT for a user id that could escape the folder. */
export function profilePath(root: string, user: string): string {
  if (!USER_ID.test(user) || user === "." || user === "..") {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `user id ${JSON.stringify(user)}: expected [A-Za-z0-9._-]{1,64}`,
    );
  }
  return join(memoryPaths(root).profiles, `${user}.json`);
}

/** The user's profile; a user without one gets `{ user_id }` (routing then falls to its defaults). */
export function readProfile(root: string, user: string): { profile: Profile; found: boolean } {
  const path = profilePath(root, user);
  try {
    return { profile: readJsonFile(path, ProfileSchema), found: true };
  } catch (error) {
    if (isTimewarpError(error, ErrorCode.NOT_FOUND))
      return { profile: { user_id: user }, found: false };
    throw error;
  }
}
