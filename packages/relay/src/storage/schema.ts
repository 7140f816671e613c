/** Row types of the relay's tables; booleans are 0/1 so SQLite and PostgreSQL agree. */
export interface RelaySchema {
  relay_channels: ChannelRow;
  relay_users: UserRow;
  relay_nodes: RelayNodeRow;
  relay_media: MediaRow;
  relay_settings: SettingRow;
}

export interface ChannelRow {
  channel_id: string;
  label: string | null;
  secret: string;
  token_param: string;
  instance_id: string | null;
  last_connected_at: number | null;
  last_disconnected_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface UserRow {
  channel_id: string;
  sender_id: string;
  chat_id: string | null;
  token: string;
  /** JSON array of lowercased agent ids, or null for all agents. */
  allow_agents: string | null;
  enabled: number;
  /** Keeps listings in the order users were added. */
  position: number;
}

export interface RelayNodeRow {
  id: string;
  name: string;
  url: string;
  admin_token: string | null;
  created_at: number;
}

export interface MediaRow {
  id: string;
  file_name: string;
  original_name: string | null;
  mime_type: string;
  size: number;
  created_at: number;
}

export interface SettingRow {
  key: string;
  value: string;
}
