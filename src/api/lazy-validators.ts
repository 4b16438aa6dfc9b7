// Request validators compiled on first use. Fastify compiles every route's schemas with Ajv when the app starts,
// ~200 ms of the service's start-up on this machine (a CPU profile of `npm start`, on an existing data dir), for
// routes most of which a given process may never see. Each validator here compiles its schema the first time a
// request needs it (a few milliseconds, once per route and request part), with Fastify's own Ajv compiler and
// options, so what is accepted and every error message stay as they were.
import AjvCompiler from '@fastify/ajv-compiler';

type ValidatorCompiler = ReturnType<ReturnType<typeof AjvCompiler>>;
type RouteSchema = Parameters<ValidatorCompiler>[0];
type Validator = ReturnType<ValidatorCompiler>;

/** Fastify's validator-compiler factory, with every validator it builds compiled lazily. */
export function lazyValidatorCompilers(): (...args: Parameters<ReturnType<typeof AjvCompiler>>) => ValidatorCompiler {
  const build = AjvCompiler();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    return (route: RouteSchema) => {
      let compiled: Validator | null = null;
      // Fastify reads the validator's `errors` after a failed call, as Ajv's own validators carry them.
      const validate = ((data: unknown) => {
        compiled ??= compile(route);
        const ok = (compiled as (d: unknown) => unknown)(data);
        validate.errors = (compiled as { errors?: unknown }).errors ?? null;
        return ok;
      }) as ((data: unknown) => unknown) & { errors: unknown };
      validate.errors = null;
      return validate as unknown as Validator;
    };
  };
}
