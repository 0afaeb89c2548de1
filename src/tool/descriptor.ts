import type { Environment } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import { findNonJson, frozenJson } from "../outcome/json.ts";
import type { Implementation } from "../contract/placement.ts";
import type { Descriptor } from "../contract/grant.ts";

/**
 * Wraps a placement's descriptor: Brain keeps it opaque and frozen and hands it
 * to the Environment's `interpret` with every call. An Environment that checks
 * descriptors refuses a malformed one here, at placement.
 */
export function descriptorImplementation(
  toolName: string,
  descriptor: Descriptor,
  env: Environment | undefined,
): Implementation {
  // One frozen copy, checked: a getter or Proxy of the application's never runs again.
  const frozen = frozenJson(descriptor) as Descriptor | undefined;
  if (typeof frozen?.type !== "string") {
    const nonJson = frozen === undefined ? findNonJson(descriptor) : undefined;
    throw new BrainError(
      "invalid_tool",
      `tool ${toolName}: a descriptor must be a JSON object with a string type${nonJson ? ` (${nonJson})` : ""}`,
    );
  }
  try {
    env?.checkDescriptor?.(frozen, toolName);
  } catch (error) {
    if (isInstance(error, BrainError)) throw error;
    throw new BrainError(
      "invalid_tool",
      `tool ${toolName}: environment ${env?.name} refused its descriptor: ${errorText(error)}`,
      { cause: error },
    );
  }
  return Object.freeze(
    {
      kind: "descriptor" as const,
      descriptor: frozen,
      admit({ env }) {
        if (!env?.interpret) {
          return Promise.reject(
            new BrainError(
              "unsupported_runtime",
              `tool ${toolName}: descriptor ${frozen.type} needs an Environment that interprets it${
                env ? `; ${env.name} does not` : ""
              }`,
            ),
          );
        }
        return Promise.resolve();
      },
      execute(dispatch) {
        // Handed back, so an Environment written as an async function has its rejection seen by the dispatcher.
        return dispatch.env!.interpret!(frozen, dispatch);
      },
    } satisfies Implementation & { descriptor: Descriptor },
  );
}
