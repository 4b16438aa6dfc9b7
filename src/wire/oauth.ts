// The token endpoint on the wire (contract §2.3-2.5): the request (a form, or a JSON object with the same fields,
// parsed by the route itself) and the answer.
import { Type, type Static } from 'typebox';

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const PASSWORD_GRANT = 'password';

/** Documents the token request in OpenAPI only: the handler parses the raw body itself (form or JSON). */
export const TokenRequestSchema = Type.Object(
  {
    grant_type: Type.String({ description: `${JWT_BEARER_GRANT} or ${PASSWORD_GRANT}` }),
    assertion: Type.Optional(Type.String({ description: 'jwt-bearer: an HS256 JWT signed with the key secret' })),
    username: Type.Optional(Type.String({ description: 'password grant: the user email' })),
    password: Type.Optional(Type.String({ description: 'password grant' })),
    session: Type.Optional(
      Type.String({
        description:
          'password grant from the web console: "cookie" sets the token in an HttpOnly cookie and leaves it out of the body (needs X-Requested-With: sensorcloud-console)',
      }),
    ),
  },
  { description: 'application/x-www-form-urlencoded, or a JSON object with the same fields' },
);

export const TokenResponseSchema = Type.Object({
  access_token: Type.Optional(
    Type.String({ description: 'absent with session=cookie: the token is in the HttpOnly cookie' }),
  ),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
});
/** The answer; access_token is left out only for a console login that asked for the cookie. */
export type TokenResponse = Static<typeof TokenResponseSchema>;
