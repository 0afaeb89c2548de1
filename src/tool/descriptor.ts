import type { Environment } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import { findNonJson } from "../outcome/json.ts";
import { deepFreeze } from "../util/freeze.ts";
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
  const nonJson = findNonJson(descriptor);
  if (typeof descriptor?.type !== "string" || nonJson) {
    throw new BrainError(
      "invalid_tool",
      `tool ${toolName}: a descriptor must be a JSON object with a string type${nonJson ? ` (${nonJson})` : ""}`,
    );
  }
  const frozen = deepFreeze(structuredClone(descriptor));
  try {
    env?.checkDescriptor?.(frozen, toolName);
  } catch (error) {
    if (error instanceof BrainError) throw error;
    throw new BrainError(
      "invalid_tool",
      `tool ${toolName}: environment ${env?.name} refused its descriptor: ${error}`,
      {
        cause: error,
      },
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
