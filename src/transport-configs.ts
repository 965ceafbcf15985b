/**
 * The types of `createEventBus`'s `transport` block, by `type`: a built-in transport's block is checked at
 * compile time (a misspelt option, a wrong value), as its factory checks it at run time. A transport
 * registered with `registerTransport` takes any options unless it declares its block:
 *
 * ```ts
 * declare module 'eventlane' {
 *   interface TransportConfigs {
 *     'my-queue': { type: 'my-queue'; url: string };
 *   }
 * }
 * ```
 */

/**
 * Config blocks by transport type; open to declaration merging. The built-in transports declare theirs
 * in `src/builtin-transports.ts`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface TransportConfigs {}

/**
 * The `transport` block of type `T`: the declared block of a known type, otherwise any options (a transport
 * that declared none; `T` is `string` when the block's type is not a literal, e.g. a config read at run time).
 */
export type TransportBlock<T extends string = string> = { type: T } & (T extends keyof TransportConfigs ? TransportConfigs[T] : { [option: string]: unknown });

/**
 * Each transport's own `subscribe` options, by type (next to `CommonSubscribeOptions`); open to declaration
 * merging as `TransportConfigs` is. A bus whose transport type is declared here types `subscribe`'s options
 * exactly (`SubscribeOptionsFor`).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface TransportSubscribeOptions {}
